"""Bug reports read as an engineer reads them (issue 11): the files and functions a stack trace
names, the code a report shows before its prose, and names that many chunks define counting
less than rare ones."""

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchOptions
from qmd_daemon.search.query import MAX_TERMS, parse_query
from qmd_daemon.search.report import Frame, frame_file_matches, read_report
from tests.conftest import indexed

TRACES = {
    "python": ('  File "/usr/lib/python3/site-packages/pkg/core/mul.py", line 12, in flatten',
               Frame("/usr/lib/python3/site-packages/pkg/core/mul.py", "flatten", innermost_first=False)),
    "windows python": ('  File "C:\\Python\\lib\\pkg\\core\\expr.py", line 3, in __new__',
                       Frame("C:/Python/lib/pkg/core/expr.py", "__new__", innermost_first=False)),
    "ipython": ("~/code/astro/wcs/wcs.py in wcs_pix2world(self, *args, **kwargs)",
                Frame("~/code/astro/wcs/wcs.py", "wcs_pix2world", innermost_first=False)),
    "java": ("\tat com.example.net.Client$Inner.send(Client.java:42)",
             Frame("com/example/net/Client.java", "send")),
    "node": ("    at handle (/app/src/server.js:10:5)", Frame("/app/src/server.js", "handle")),
    "go": ("\t/home/me/go/src/app/cmd/main.go:42 +0x1d", Frame("/home/me/go/src/app/cmd/main.go", "")),
    "rust": ("thread 'main' panicked at src/parser/lex.rs:12:5:", Frame("src/parser/lex.rs", "")),
    # .NET names the file after ` in `, its line as `:line N`, and a lambda's method as `<Create>b__0`
    "csharp": ("   at Ns.Rule`2.<>c__DisplayClass1_0.<Create>b__0(T x) in C:\\My Src\\Rule.cs:line 44",
               Frame("C:/My Src/Rule.cs", "Create")),
    "bsd assert": ("Assertion failed: (end > start), function locfile_locate, file src/locfile.c, line 82.",
                   Frame("src/locfile.c", "locfile_locate")),
    "swift": ("Fatal error: Unexpectedly found nil: file MyApp/ViewController.swift, line 42",
              Frame("MyApp/ViewController.swift", "")),
    "gdb": ("#4  0x0000555555562f53 in stack_restore (jq=jq@entry=0x5555) at src/execute.c:295",
            Frame("src/execute.c", "stack_restore")),
    "ruby": ("/usr/local/bundle/gems/rack-2.2.2/lib/rack/parser.rb:359:in `handle_empty!': EOFError",
             Frame("/usr/local/bundle/gems/rack-2.2.2/lib/rack/parser.rb", "handle_empty!")),
    "go module": ("\tC:/Users/me/go/pkg/mod/github.com/spf13/viper@v1.19.0/viper.go:2227 +0xe",
                  Frame("/Users/me/go/pkg/mod/github.com/spf13/viper@v1.19.0/viper.go", "")),
    "node module": ("    at Module.escapeRegex (file:///home/p/node_modules/zod/v4/core/util.js:279:16)",
                    Frame("/home/p/node_modules/zod/v4/core/util.js", "escapeRegex")),
}


@pytest.mark.parametrize("language", sorted(TRACES))
def test_stack_frames_of_each_language_name_file_and_function(language: str) -> None:
    line, frame = TRACES[language]
    assert read_report(f"It crashes\n{line}\nthe end").frames == [frame]


def test_a_url_or_a_version_is_not_a_frame() -> None:
    assert read_report("see http://example.com:8080/x and version 1.2.3:4").frames == []


def test_a_frame_names_a_file_only_at_a_folder_boundary() -> None:
    assert frame_file_matches("/usr/lib/site-packages/pkg/mod.py", "pkg/mod.py")
    assert frame_file_matches("com/example/Client.java", "src/main/java/com/example/Client.java")
    assert not frame_file_matches("/usr/lib/site-packages/pkg/mod.py", "kg/mod.py")
    assert not frame_file_matches("/usr/lib/site-packages/pkg/mod.py", "other/mod.py")


INSTALLED = [  # a frame in an installed package, the repository file it was built from, and a file it is not
    ("/usr/lib/python3/site-packages/pkg/mod.py", "src/pkg/mod.py", "src/other/mod.py"),
    ("file:///app/node_modules/zod/v4/core/util.js", "packages/zod/src/v4/core/util.ts",
     "packages/zod/src/v4/classic/util.ts"),
    ("/app/node_modules/@scope/pkg/dist/esm/a/b.js", "packages/pkg/src/a/b.ts", "packages/other/src/a/b.ts"),
    ("/home/me/.cargo/registry/src/github.com-1ecc6299db9ec823/grep-matcher-0.1.5/src/lib.rs",
     "crates/matcher/src/lib.rs", "crates/regex/src/lib.rs"),
]


@pytest.mark.parametrize(("frame", "source", "other"), INSTALLED)
def test_a_frame_in_an_installed_package_names_the_file_it_was_built_from(
    frame: str, source: str, other: str
) -> None:
    path = read_report(f"    at f ({frame}:1:2)").frames[0].path
    assert frame_file_matches(path, source)
    assert not frame_file_matches(path, other)


def test_the_innermost_frame_is_the_last_python_prints_and_the_first_others_print() -> None:
    python = 'Traceback (most recent call last):\n  File "a.py", line 1, in f\n  File "b.py", line 2, in g\n'
    java = "java.lang.NullPointerException\n\tat x.B.g(B.java:2)\n\tat x.A.f(A.java:1)\n"
    assert read_report(python).frame_paths == ["b.py", "a.py"]
    assert read_report(java).frame_paths == ["x/B.java", "x/A.java"]


# A .NET trace and a Node one (a TypeScript package's built file) print the innermost frame
# first; the outer frame's file says the report's words more often.
OUTER_WORDY = "\n".join(f"// validate the collection rule: validator {i} validates the rule collection"
                        for i in range(10))
_NET = "   at Lib.{0}`1.{1}(Context`1 c) in C:\\w\\src\\Lib\\{0}.cs:line {2}\n"
_NODE = "    at {0} (file:///app/node_modules/rules/core/{1}.js:{2}:9)\n"
_NET_FILES = {
    "src/Lib/CollectionRule.cs": "class CollectionRule {\n  void Pick() { items.RemoveAt(0); }\n}\n",
    "src/Lib/Validator.cs": f"class Validator {{\n{OUTER_WORDY}\n  void Validate() {{ r.Pick(); }}\n}}\n",
}
_NODE_FILES = {
    "packages/rules/src/core/collectionRule.ts":
        "export function pick(items: number[]) {\n  return pick(items);\n}\n",
    "packages/rules/src/core/validator.ts": f"{OUTER_WORDY}\nexport function validate() {{ pick([]); }}\n",
}
NON_PYTHON_TRACES = {
    ".NET": ("Index out of range validating a collection rule\nThe validator fails:\n"
             "   at System.Collections.Generic.List`1.RemoveAt(Int32 index)\n"
             + _NET.format("CollectionRule", "Pick", 335) + _NET.format("Validator", "Validate", 92),
             _NET_FILES, "src/Lib/CollectionRule.cs"),
    "Node": ("Maximum call stack on a collection rule\nIt fails:\n"
             "RangeError: Maximum call stack size exceeded\n"
             + _NODE.format("pick", "collectionRule", 3) + _NODE.format("validate", "validator", 9),
             _NODE_FILES, "packages/rules/src/core/collectionRule.ts"),
}


@pytest.mark.parametrize("trace", sorted(NON_PYTHON_TRACES))
def test_the_innermost_frame_of_a_trace_printed_innermost_first_leads(
    engine: Engine, tmp_path: Path, trace: str
) -> None:
    report, files, innermost = NON_PYTHON_TRACES[trace]
    name = indexed(engine, tmp_path / "p", files)
    hits = engine.search(report, [name], options=SearchOptions(per_file=1, explain=True))
    assert hits[0].path == innermost, [(h.path, h.explain["boosts"]) for h in hits]


# Files that say the report's words often: without the trace, they would lead.
WORDY = {
    f"pkg/printing/printer{i}.py": f"def render_{i}(expr):\n"
    "    '''Render a product expression: print the product, its limits and the result.'''\n"
    "    return print_product(expr, limits=True, result=True)\n"
    for i in range(6)
}
TRACED = {
    "pkg/core/flatten.py": "def flatten(seq):\n    out = []\n    for item in seq:\n        out.extend(item)\n"
    "    return out\n",
    "other/core/flatten.py": "def flatten(tree):\n    return list(tree)\n",
}
REPORT = """Printing a product of limits fails
Rendering the product expression with its limits and result prints nothing, then fails:

Traceback (most recent call last):
  File "/home/me/report.py", line 3, in <module>
  File "/home/me/venv/lib/python3.11/site-packages/pkg/core/flatten.py", line 4, in flatten
TypeError: 'int' object is not iterable
"""


def test_the_innermost_frame_file_leads_even_when_other_files_say_more_words(
    engine: Engine, tmp_path: Path
) -> None:
    name = indexed(engine, tmp_path / "p", {**WORDY, **TRACED})
    hits = engine.search(REPORT, [name], options=SearchOptions(per_file=1, explain=True))
    paths = [h.path for h in hits]
    assert paths[0] == "pkg/core/flatten.py", [(h.path, h.explain) for h in hits]
    other = [h for h in hits if h.path == "other/core/flatten.py"]
    assert all("frame_file" not in h.explain["boosts"] for h in other)


# `get_kind` is defined by many classes, `Derivative` by one: a report naming both is about the latter.
KINDS = {
    f"pkg/kinds/kind{i}.py": f"class Thing{i}:\n    def get_kind(self):\n"
    "        '''The kind attribute: UndefinedKind unless a kind attribute is known.'''\n"
    "        return UndefinedKind  # kind attribute, wrong kind\n"
    for i in range(6)
}
FUNCTION = {"pkg/core/function.py": "class Derivative:\n    '''d/dx.'''\n    def __init__(self, e):\n"
            "        self.e = e\n"}


def test_a_rarely_defined_name_outweighs_one_many_chunks_define(engine: Engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "p", {**KINDS, **FUNCTION})
    question = "Wrong Derivative get_kind: `Derivative(A, x).get_kind()` gives UndefinedKind"
    hits = engine.search(question, [name], options=SearchOptions(per_file=1, explain=True))
    assert hits[0].path == "pkg/core/function.py", [(h.path, h.explain["boosts"]) for h in hits]


def test_a_long_report_keeps_the_names_its_code_calls_over_its_prose() -> None:
    prose = " ".join(f"word{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(MAX_TERMS + 10))
    report = f"Slow result\n{prose}\n\n```python\nresult = frobnicate(data)\n```\n"
    terms = parse_query(report).terms
    assert len(terms) == MAX_TERMS
    assert "frobnicate" in terms and "Slow" in terms


def test_an_error_message_yields_its_fixed_words() -> None:
    report = read_report(
        "ValueError: Unrecognized QDP line: read serr 1 2\n"
        "TypeError: 'int' object is not iterable\n"
        "KeyError: 'a'\n"
    )
    assert report.error_phrases == ["Unrecognized QDP line", "object is not iterable"]


def test_the_chunk_raising_a_quoted_error_leads_wordier_files(engine: Engine, tmp_path: Path) -> None:
    # The report's prose matches tables.py best; only reader.py holds the message itself, in a
    # long function that BM25 alone ranks below it.
    prose = "\n".join(
        f"def table_line_{i}(table, line):\n    # read a table line: a comment line of the table reader\n"
        f"    return table.line(line) or table  # table line comment\n"
        for i in range(6)
    )
    steps = "".join(f"    value_{i} = convert(value_{i - 1}, scale={i})\n" for i in range(1, 40))
    reader = ("def interpret(line):\n    value_0 = line.strip()\n" + steps + "    if not value_39:\n"
              "        raise ValueError(f'Unrecognized table line: {line}')\n    return value_39\n")
    name = indexed(engine, tmp_path / "p", {"io/tables.py": prose, "io/reader.py": reader})
    report = ("Reading a table fails when a line of the table has a comment\n\n"
              "Reading my table line by line, the table reader stops at the first table line:\n\n"
              "```\nValueError: Unrecognized table line: ! comment 1 2\n```\n")
    top = engine.search(report, [name], options=SearchOptions(max_tokens=None))[0]
    assert top.path == "io/reader.py"
