"""The installer's scripts as their own interpreters read them. PowerShell cannot run on these
machines (no registry here ships it), so the .ps1 files are checked with the PowerShell grammar
of tree-sitter: they parse, install.ps1 passes only options the shared installer knows, and the
paths the installer fills in stay verbatim strings. The .sh and .py fills run for real."""

from __future__ import annotations

import ast
import codecs
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tree_sitter
import tree_sitter_powershell

from qmd_daemon.setup import installer
from qmd_daemon.setup import integrations as integ
from qmd_daemon.setup.journal import Journal
from tests.conftest import REPO_ROOT
from tests.setup.conftest import setup_paths

PS1_FILES = sorted(p for p in REPO_ROOT.glob("**/*.ps1") if ".venv" not in p.parts)
PS_PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_powershell.language()))
# what each language would mangle: quotes (PowerShell's typographic ones too), $, backtick,
# backslashes with \U (a Python escape), spaces, wildcard brackets, a non-ASCII letter
TRICKY = "Ann O'Neil\u2019s $HOME `x` \"q\" [1] Jos\u00e9 \\Users"


def _nodes(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    yield node
    for child in node.children:
        yield from _nodes(child)


def _parse_ps1(text: str) -> tree_sitter.Node:
    root = PS_PARSER.parse(text.encode("utf-8")).root_node
    bad = [n for n in _nodes(root) if n.is_error or n.is_missing]
    assert not bad, [(n.start_point, n.text[:60]) for n in bad]
    return root


def _ps_assigned(root: tree_sitter.Node, name: str) -> tree_sitter.Node:
    for node in _nodes(root):
        if node.type == "assignment_expression" and node.children[0].text.decode() == f"${name}":
            return node.child_by_field_name("value")
    raise AssertionError(f"no assignment to ${name}")


def _verbatim(value: tree_sitter.Node) -> str:
    strings = [n for n in _nodes(value) if n.type == "string_literal"]
    assert len(strings) == 1 and strings[0].text == value.text, value.text
    (inner,) = strings[0].children
    assert inner.type == "verbatim_string_characters", inner.type  # single quotes: nothing expands
    return re.sub(r"(['\u2018\u2019\u201a\u201b])\1", r"\1", inner.text.decode("utf-8")[1:-1])


@pytest.mark.parametrize("script", PS1_FILES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_every_powershell_script_parses_and_reads_the_same_everywhere(script: Path) -> None:
    data = script.read_bytes()
    # Windows PowerShell 5.1 reads a script without a BOM in the ANSI code page
    assert data.isascii() or data.startswith(codecs.BOM_UTF8)
    root = _parse_ps1(data.decode("utf-8-sig"))
    # a path is data: without -LiteralPath, [ ] and ` in it are wildcard syntax
    for command in (n for n in _nodes(root) if n.type == "command"):
        name = command.child_by_field_name("command_name") or command.children[0]
        if name.text.decode().lower() in ("test-path", "get-item", "get-content", "remove-item"):
            assert b"-LiteralPath" in command.text, command.text


def test_install_ps1_passes_only_what_the_installer_takes() -> None:
    root = _parse_ps1((REPO_ROOT / "install.ps1").read_text(encoding="utf-8"))
    literals = [n.text.decode()[1:-1] for n in _nodes(root) if n.type == "verbatim_string_characters"]
    flags = {s for s in literals if s.startswith("--")}
    assert {"--semantic-retrieval", "--dry-run", "--profile", "--python-env", "--git-hook"} <= flags
    usage = subprocess.run(
        [sys.executable, "-m", "qmd_daemon.setup", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert all(re.search(rf"{re.escape(flag)}\b", usage) for flag in flags), flags
    validate = next(n for n in _nodes(root) if n.type == "attribute" and b"ValidateSet" in n.text)
    answers = re.findall(r"'([^']*)'", validate.text.decode())
    assert answers and set(answers) <= set(installer.ANSWERS)


def test_filled_paths_are_taken_verbatim_by_each_language(tmp_path: Path) -> None:
    base = tmp_path / TRICKY
    paths = setup_paths(base)
    python = base / "venv" / "python"
    integ.install_hook_scripts(Journal(echo=lambda _: None), paths, python, auto_retrieve=True)
    warm, search = integ.wrapper_path(paths, "qmd-warm"), integ.wrapper_path(paths, "ai-search")
    hooks = paths.hooks_dir

    # Python: the module compiles and the constant is the path
    tree = ast.parse((hooks / "qmd-auto-retrieve.py").read_text(encoding="utf-8"))
    (value,) = [
        n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "QMD_AI_SEARCH_DEFAULT"
    ]
    assert ast.literal_eval(value) == str(search)

    # sh: the filled line, run by sh, sets the variable to the path
    for script, name, expected in (
        ("qmd-session-start.sh", "QMD_WARM_DEFAULT", warm),
        ("qmd-auto-retrieve.sh", "QMD_PYTHON_DEFAULT", python),
    ):
        text = (hooks / script).read_text(encoding="utf-8")
        (line,) = [ln for ln in text.splitlines() if ln.startswith(f"{name}=")]
        shown = subprocess.run(["sh", "-c", f'{line}\nprintf %s "${name}"'], capture_output=True, text=True)
        assert shown.stdout == str(expected), (line, shown.stderr)

    # PowerShell: a single-quoted (verbatim) string that reads back as the path, in a file with a
    # BOM (Windows PowerShell 5.1 would read the non-ASCII letter in the ANSI code page)
    for script, name, expected in (
        ("qmd-session-start.ps1", "QMD_WARM_DEFAULT", warm),
        ("qmd-auto-retrieve.ps1", "QMD_PYTHON_DEFAULT", python),
    ):
        data = (hooks / script).read_bytes()
        assert data.startswith(codecs.BOM_UTF8)
        root = _parse_ps1(data.decode("utf-8-sig"))
        assert _verbatim(_ps_assigned(root, name)) == str(expected)
