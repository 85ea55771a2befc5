"""`qmd_daemon/settings.py` is the package's only reader of `QMD_*` environment variables, and
docs/usage.md's one table lists every knob the package, the clients, the hooks and the install
scripts read (checked on the source, so a knob added anywhere without both fails here)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from qmd_daemon.settings import MODEL_ENV_VARS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "qmd_daemon"
HOME = PACKAGE / "settings.py"
KNOB = re.compile(r"^QMD_[A-Z0-9_]+$")
KNOB_IN_TEXT = re.compile(r"\bQMD_[A-Z0-9_]+\b")


def _is_environ(node: ast.AST) -> bool:
    """`os.environ` or a bare `environ`."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _knob(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and KNOB.match(node.value):
        return node.value
    return None


def knob_reads(path: Path) -> list[tuple[int, str]]:
    """Each `QMD_*` read in `path`: os.environ.get/[...]/pop/in, os.getenv, and a knob name handed
    to a helper function (`_env("QMD_X")`: the way a read hides behind one)."""
    reads: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        key: str | None = None
        if isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            key = _knob(node.slice)
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            key = _knob(node.left)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            environ_method = isinstance(func, ast.Attribute) and _is_environ(func.value)
            getenv = isinstance(func, ast.Attribute) and func.attr == "getenv"
            helper = isinstance(func, ast.Name)
            if environ_method or getenv or helper:
                key = _knob(node.args[0])
        if key is not None:
            reads.append((getattr(node, "lineno", 0), key))
    return sorted(reads)


def test_only_settings_reads_qmd_knobs_in_the_package() -> None:
    outside = [
        f"{p.relative_to(ROOT)}:{line} {key}"
        for p in sorted(PACKAGE.rglob("*.py"))
        if p != HOME
        for line, key in knob_reads(p)
    ]
    assert outside == [], "read QMD_* knobs in qmd_daemon/settings.py (Settings or SetupSettings)"


def test_the_check_sees_each_way_of_reading_a_knob(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\n"
        "a = os.environ.get('QMD_A')\n"
        "b = os.environ['QMD_B']\n"
        "c = 'QMD_C' in os.environ\n"
        "d = os.getenv('QMD_D')\n"
        "e = _env_float('QMD_E', 1.0)\n"
        "env = {}\nenv['QMD_F'] = '1'\nenv.pop('QMD_G', None)\n"  # a child's environment: writes
        "msg = 'raise QMD_H to lift the cap'\n",
        encoding="utf-8",
    )
    assert [key for _line, key in knob_reads(sample)] == ["QMD_A", "QMD_B", "QMD_C", "QMD_D", "QMD_E"]


def _documented() -> set[str]:
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    section = text.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in KNOB_IN_TEXT.findall(row.split(" | ")[0])}


def _read_by_code() -> set[str]:
    names = {key for _line, key in knob_reads(HOME)}
    for path in sorted((ROOT / "clients").glob("*.py")):
        names |= {key for _line, key in knob_reads(path)}
    for path in [*sorted((ROOT / "hooks").iterdir()), ROOT / "install.sh", ROOT / "install.ps1"]:
        # the scripts' `*_DEFAULT` names are placeholders the installer fills, not knobs
        text = path.read_text(encoding="utf-8")
        names |= {n for n in KNOB_IN_TEXT.findall(text) if not n.endswith("_DEFAULT")}
    return names


def test_one_table_documents_every_knob() -> None:
    code = _read_by_code() | set(MODEL_ENV_VARS.values())
    documented = _documented()
    assert sorted(code - documented) == [], "knobs read but not in docs/usage.md's table"
    assert sorted(documented - code) == [], "knobs in docs/usage.md's table that nothing reads"
