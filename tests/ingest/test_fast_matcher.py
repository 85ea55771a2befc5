"""fast_matcher answers exactly as pathspec does, for the default mask, the built-in excludes and
.gitignore files with negations and folder patterns, over this project's own paths and paths where
a pattern without a slash matches a folder's name (`docs.md/`, `a/node_modules/`) rather than the
file's: fast_matcher checks such patterns one path component at a time."""

from pathlib import Path

import pathspec
import pytest

from qmd_daemon.ingest.scan import compile_mask, compile_patterns, fast_matcher
from qmd_daemon.settings import DEFAULT_EXCLUDES, DEFAULT_MASK

REPO = Path(__file__).resolve().parents[2]
GITIGNORE = """
# build output
build/
*.log
!keep.log
/docs/*.md
!/docs/usage.md
**/fixtures/**
tests/**/test_*.py
!tests/ingest/test_scan.py
node_modules/
*.min.js
!keep.min.js
[Tt]emp
a**b
"""


def _paths() -> list[str]:
    files = [p.relative_to(REPO).as_posix() for p in REPO.rglob("*") if ".git" not in p.parts]
    extra = ["build/x.py", "a/build/", "build/", "x.log", "keep.log", "a/keep.log", "docs/a/b.md", "", "a"]
    extra += [
        "docs.md/x.bin", "a/notes.MD/b/c.bin", "a/node_modules", "a/node_modules/", "node_modules/b/c.js",
        "x/node_modules.js", "x/y.min.js/", "x/y.min.js/z", "x/keep.min.js", "./a.py", "/a.py", "a/.py",
        "temp/x", "a/Temp", "aXXb/c", "a/ab", "Makefile", "src/MAKEFILE", "a/b.PY", ".git/", "a/.git/x",
        "A/B/C/D/E/F/g.rs", "a.lock/", "a/package-lock.json", "dist", "dist/", "a/dist/b.ts",
    ]  # fmt: skip
    return files + [f + "/" for f in files[:200]] + extra


@pytest.mark.parametrize(
    "spec",
    [
        compile_mask(DEFAULT_MASK),
        compile_patterns(list(DEFAULT_EXCLUDES), "ignore"),
        pathspec.GitIgnoreSpec.from_lines(GITIGNORE.splitlines()),
        compile_patterns(GITIGNORE.splitlines(), "ignore"),
    ],
)
def test_fast_matcher_agrees_with_pathspec(spec: pathspec.PathSpec) -> None:
    matches = fast_matcher(spec)
    paths = _paths()
    assert len(paths) > 300
    answers = [spec.match_file(p) for p in paths]
    assert [matches(p) for p in paths] == answers
    assert any(answers) and not all(answers)  # the paths exercise both answers
