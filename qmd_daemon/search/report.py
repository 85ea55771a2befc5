"""Reading a bug report as an engineer does: the stack frames it quotes (which file, which
function), the error messages, and the code it shows, before its prose.

Every pattern is bounded and linear (a report can be a pasted 32,000-character log).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

# A run of path characters, taken whole (possessive, starting only where a run starts: linear);
# `_EXTENSION` then says whether it names a source file (`//host.com:80` is a URL's).
_RUN = r"(?<![\w./\\~@-])(?P<path>[\w./\\~@-]++)"
_EXTENSION = re.compile(r"[^/\\]\.[A-Za-z]\w{0,4}$")
# The first _INNERMOST_LAST patterns are Python's, whose traces print the innermost frame last,
# as a Python file's frame in any other form does (IPython 8: `File ~/x.py:12, in f()`).
_INNERMOST_LAST = 2
_PYTHON_FILE = re.compile(r"\.py[xi]?$")
_FRAMES = (
    # Python: File "x/y.py", line 12, in func
    re.compile(r'File "(?P<path>[^"\n]{1,500})", line \d+(?:, in (?P<func>[\w.<>]+))?'),
    # IPython: ~/x/y.py in func(args)
    re.compile(rf"{_RUN} in (?P<func>[A-Za-z_]\w*)\("),
    # Java / Kotlin / Scala: at pkg.Class.method(File.java:12)
    re.compile(r"\bat (?P<func>[\w$.<>]++)\((?P<path>[\w$.-]++):\d+\)"),
    # .NET: at Ns.Type`1.Method(Int32 x) in C:\src\Type.cs:line 12 (the path may hold spaces)
    re.compile(r"\bat (?P<func>[\w$.`<>|\[\],]++)\([^()\n]{0,500}+\) in "
               r"(?P<path>(?:[A-Za-z]:)?[^\n:]{1,500}+):line \d+"),
    # BSD/macOS assert(), Swift: function f, file dir/x.c, line 82
    re.compile(rf"(?:\bfunction (?P<func>[\w$.<>:~]++), )?\bfile {_RUN}, line \d+"),
    # gdb: #4  0x5555 in stack_restore (jq=0x0) at src/execute.c:295
    re.compile(rf"^#\d+ +(?:0x[0-9a-fA-F]+ in )?(?P<func>[\w:~<>]++) \([^\n]{{0,500}}?\) at {_RUN}:\d+"),
    # Ruby: lib/x/parser.rb:359:in `handle!' (3.4: in 'Parser#handle!')
    re.compile(rf"{_RUN}:\d+:in [`'](?:block (?:\(\d+ levels\) )?in )?(?:[\w:]+[#.])?(?P<func>[\w?!=]+)"),
    # JavaScript / Node: at func (path/file.js:12:5); Go, Rust, C, gcc: path/file.go:12
    re.compile(rf"(?:\bat (?P<func>[\w$.<>]++) \()?{_RUN}:\d+"),
)
# A Node ES module's frame names its file as a URL: at f (file:///app/x.js:1:2)
_FILE_URL = re.compile(r"\bfile://(?=/)")
_GENERATED = re.compile(r"^<(\w+)>\w.*|\[.*")  # .NET `<Create>b__0`, `ToArray[TSource]`; not `<module>`
# `ValueError: cannot reshape`, `error[E0308]: mismatched types`, `panic: runtime error: ...`
_ERROR = re.compile(
    r"^[ \t]*(?:[\w.]*(?:Error|Exception|Warning|Failure)|error(?:\[\w+\])?|panic|fatal)"
    r"[ \t]*:[ \t]*(?P<msg>\S.{3,})$",
    re.MULTILINE,
)
# Line-start patterns use `[ \t]*`, never `\s*`: `\s` crosses newlines, so on a run of blank lines
# every line start re-read all that followed (31,000 newlines: 100 s). A fence opens with at most
# 10 marks: an unclosed fence scans to the end, and only so many distinct openings exist.
_FENCE = re.compile(r"^[ \t]*(`{3,10}|~{3,10})[^\n]*\n(?P<body>.*?)^[ \t]*\1", re.MULTILINE | re.DOTALL)
_INLINE = re.compile(r"`([^`\n]{1,200})`")
_PROMPT = re.compile(r"^[ \t]*(?:>>>|\.\.\.|In \[\d+\]:|\$|>) ?(?P<code>.*)$", re.MULTILINE)
MAX_FRAMES = 40
MAX_ERRORS = 4
# The fixed words of a message, between the values a program puts in (`'b'`, `3`, `f(x)`, `:`):
# `raise ValueError(f"Unrecognized QDP line: {line}")` keeps "Unrecognized QDP line" in the code.
_MESSAGE_WORDS = re.compile(r"[A-Za-z]+(?:[ -]+[A-Za-z]+)*")
MIN_PHRASE_WORDS = 3


@dataclass(frozen=True)
class Frame:
    path: str  # as the trace wrote it, separators made `/`
    function: str  # "" when the trace does not say
    # Python prints the innermost frame last ("most recent call last"); JVM, .NET, Node, Go,
    # Rust, Ruby and gdb print it first
    innermost_first: bool = True


@dataclass
class Report:
    frames: list[Frame] = field(default_factory=list)  # as the report prints them
    errors: list[str] = field(default_factory=list)  # the messages after `XError:`
    code: str = ""  # fenced blocks, inline code and prompt lines, joined

    @property
    def error_phrases(self) -> list[str]:
        """The longest run of plain words of each error message, when it has MIN_PHRASE_WORDS:
        the part of the message written in the code's string literal."""
        phrases: dict[str, None] = {}
        for message in self.errors:
            runs = [m.group() for m in _MESSAGE_WORDS.finditer(message)]
            longest = max(runs, key=lambda r: len(r.split()), default="")
            if len(longest.split()) >= MIN_PHRASE_WORDS:
                phrases.setdefault(" ".join(longest.replace("-", " ").split()), None)
        return list(phrases)

    @property
    def frame_paths(self) -> list[str]:
        """Distinct frame files, innermost first: the innermost frames are where it went wrong.
        A report quoting traces of both print orders puts the kind its first frame has first."""
        first = [f.path for f in self.frames if f.innermost_first]
        last = [f.path for f in reversed(self.frames) if not f.innermost_first]
        both = first + last if not self.frames or self.frames[0].innermost_first else last + first
        return list(dict.fromkeys(both))


def _frame(path: str, qualified: str, innermost_first: bool) -> Frame:
    """A frame; a JVM frame names only the file, so its package path comes from the class
    (`at com.foo.Bar.baz(Bar.java:3)` -> `com/foo/Bar.java`). A .NET lambda's method
    `<Create>b__0` is the `Create` it was written in."""
    path = path.replace("\\", "/")
    owner, _, function = qualified.rpartition(".")
    function = _GENERATED.sub(lambda m: m.group(1) or "", function)
    stem, _, extension = path.rpartition(".")
    if "/" not in path and owner.split("$")[0].endswith("." + stem):
        path = owner.split("$")[0].replace(".", "/") + "." + extension
    return Frame(path, function, innermost_first)


def read_report(text: str) -> Report:
    report = Report()
    for line in text.splitlines():
        line = _FILE_URL.sub("", line[:1000])  # a minified line is not a frame; the regex stays cheap
        for i, pattern in enumerate(_FRAMES):
            match = pattern.search(line)
            if match and _EXTENSION.search(match.group("path")) and not match.group("path").startswith("//"):
                inner_first = i >= _INNERMOST_LAST and not _PYTHON_FILE.search(match.group("path"))
                report.frames.append(_frame(match.group("path"), match.group("func") or "", inner_first))
                break
        if len(report.frames) >= MAX_FRAMES:
            break
    report.errors = [m.group("msg").strip()[:300] for m in _ERROR.finditer(text)][:MAX_ERRORS]
    blocks = [m.group("body") for m in _FENCE.finditer(text)]
    prose = _FENCE.sub(" ", text)
    spans = blocks + _INLINE.findall(prose) + [m.group("code") for m in _PROMPT.finditer(prose)]
    report.code = "\n".join(spans)
    return report


def frame_file_matches(frame_path: str, indexed_path: str) -> bool:
    """A frame names an indexed file when one path ends the other at a folder boundary:
    `/usr/lib/python3/site-packages/pkg/mod.py` names `pkg/mod.py` (not `other/mod.py`), and
    `com/foo/Bar.java` names `src/main/java/com/foo/Bar.java`; or when it is an installed copy
    of the file (`_installed_copy_of`)."""
    return (
        frame_path == indexed_path
        or frame_path.endswith("/" + indexed_path)
        or indexed_path.endswith("/" + frame_path.removeprefix("./"))
        or _installed_copy_of(frame_path, indexed_path)
    )


# Where package managers install a package: the folder after it is the package's (with its version).
_INSTALLED = re.compile(
    r"(?:^|/)(?:site-packages|dist-packages|node_modules(?:/@[^/]+)?|registry/src/[^/]+|gems)/"
)
_VERSION = re.compile(r"(?:-|@)v?\d+\.\d+[^/]*$")  # grep-matcher-0.1.5, rack-2.2.2, zod@4.1.0
# What a JavaScript build writes a package's sources to, dropped from an installed path (dist/esm/x.js)
_BUILD_DIRS = frozenset({"dist", "build", "esm", "cjs", "es", "umd", "out", "lib"})
# Folders that hold a repository's sources: `src/pkg/mod.py` is installed as `pkg/mod.py`
_SOURCE_DIRS = frozenset({"src", "lib", "source"})
# A compiled file and its source: a TypeScript package installs `.js`
_JS = frozenset({"js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx"})


@lru_cache(maxsize=256)
def _installed(frame_path: str) -> tuple[str, tuple[str, ...]] | None:
    """(package, the paths inside it the frame's file may have in the repository), for a frame
    in an installed package; the last install folder counts (node_modules nest)."""
    found = list(_INSTALLED.finditer(frame_path))
    if not found:
        return None
    last = found[-1]
    package, _, inner = frame_path[last.end():].partition("/")
    parts = inner.split("/")
    while "node_modules" in last.group() and len(parts) > 1 and parts[0] in _BUILD_DIRS:
        parts = parts[1:]
    stem, _, extension = "/".join(parts).rpartition(".")
    others = sorted(_JS - {extension}) if extension in _JS else []
    return _VERSION.sub("", package).lower(), tuple(f"{stem}.{e}" for e in [extension, *others])


def _installed_copy_of(frame_path: str, indexed_path: str) -> bool:
    """A frame in an installed package (site-packages, node_modules, a Cargo registry, gems)
    names the repository file it was built from: the path inside the package ends the indexed
    path (a compiled `.js` may be the `.ts`), and the folder holding it is the package's
    (`packages/zod/src/` for `node_modules/zod/`, `crates/matcher/` for the crate
    `grep-matcher-0.1.5`; a sources folder `src/` does not count) or the repository's root."""
    installed = _installed(frame_path)
    if installed is None:
        return False
    package, tails = installed
    for tail in tails:
        if indexed_path == tail or indexed_path.endswith("/" + tail):
            owners = [d.lower() for d in indexed_path[: -len(tail)].split("/") if d and d not in _SOURCE_DIRS]
            owner = owners[-1] if owners else package  # the folder holding the package's files
            return package == owner or package.endswith(("-" + owner, "_" + owner))
    return False
