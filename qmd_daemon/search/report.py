"""Reading a bug report as an engineer does: the stack frames it quotes (which file, which
function), the error messages, and the code it shows, before its prose.

Every pattern is bounded and linear (a report can be a pasted 32,000-character log).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A run of path characters, taken whole (possessive, starting only where a run starts: linear);
# `_EXTENSION` then says whether it names a source file (`//host.com:80` is a URL's).
_RUN = r"(?<![\w./\\~-])(?P<path>[\w./\\~-]++)"
_EXTENSION = re.compile(r"[^/\\]\.[A-Za-z]\w{0,4}$")
_FRAMES = (
    # Python: File "x/y.py", line 12, in func
    re.compile(r'File "(?P<path>[^"\n]{1,500})", line \d+(?:, in (?P<func>[\w.<>]+))?'),
    # IPython: ~/x/y.py in func(args)
    re.compile(rf"{_RUN} in (?P<func>[A-Za-z_]\w*)\("),
    # Java / Kotlin / Scala / C#: at pkg.Class.method(File.java:12)
    re.compile(r"\bat (?P<func>[\w$.<>]++)\((?P<path>[\w$.-]++):\d+\)"),
    # JavaScript / Node: at func (path/file.js:12:5); Go, Rust, C, Ruby, gcc: path/file.go:12
    re.compile(rf"(?:\bat (?P<func>[\w$.<>]++) \()?{_RUN}:\d+"),
)
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


@dataclass
class Report:
    frames: list[Frame] = field(default_factory=list)  # outermost first, as traces print them
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
        """Distinct frame files, innermost first: the innermost frames are where it went wrong."""
        return list(dict.fromkeys(f.path for f in reversed(self.frames)))


def _frame(path: str, qualified: str) -> Frame:
    """A frame; a JVM frame names only the file, so its package path comes from the class
    (`at com.foo.Bar.baz(Bar.java:3)` -> `com/foo/Bar.java`)."""
    path = path.replace("\\", "/")
    owner, _, function = qualified.rpartition(".")
    stem, _, extension = path.rpartition(".")
    if "/" not in path and owner.split("$")[0].endswith("." + stem):
        path = owner.split("$")[0].replace(".", "/") + "." + extension
    return Frame(path, function)


def read_report(text: str) -> Report:
    report = Report()
    for line in text.splitlines():
        line = line[:1000]  # a minified line is not a frame; the regex stays cheap
        for pattern in _FRAMES:
            match = pattern.search(line)
            if match and _EXTENSION.search(match.group("path")) and not match.group("path").startswith("//"):
                report.frames.append(_frame(match.group("path"), match.group("func") or ""))
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
    `com/foo/Bar.java` names `src/main/java/com/foo/Bar.java`."""
    return (
        frame_path == indexed_path
        or frame_path.endswith("/" + indexed_path)
        or indexed_path.endswith("/" + frame_path.removeprefix("./"))
    )
