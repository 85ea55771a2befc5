"""docs/architecture.md's import rules, checked on the source: lower layers never reach up."""

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "qmd_daemon"
CLIENTS = Path(__file__).resolve().parent.parent / "clients"

FORBIDDEN = {
    "store": (
        "qmd_daemon.search",
        "qmd_daemon.daemon",
        "qmd_daemon.cli",
        "qmd_daemon.engine",
        "qmd_daemon.models",
    ),
    "ingest": (
        "qmd_daemon.search",
        "qmd_daemon.daemon",
        "qmd_daemon.cli",
        "qmd_daemon.engine",
        "qmd_daemon.models",
    ),
    "models": (
        "qmd_daemon.search",
        "qmd_daemon.daemon",
        "qmd_daemon.cli",
        "qmd_daemon.engine",
        "qmd_daemon.ingest",
    ),
    "search": ("qmd_daemon.daemon", "qmd_daemon.cli", "qmd_daemon.engine"),
    "daemon": ("qmd_daemon.cli", "qmd_daemon.setup"),
    "setup": ("qmd_daemon.daemon", "qmd_daemon.cli", "qmd_daemon.store", "qmd_daemon.ingest"),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_lower_layers_never_import_upper_ones() -> None:
    bad = []
    for layer, forbidden in FORBIDDEN.items():
        for path in (PACKAGE / layer).rglob("*.py"):
            bad += [f"{path.name} imports {n}" for n in _imports(path) if n.startswith(forbidden)]
    assert bad == []


def test_engine_never_imports_front_ends() -> None:
    imported = _imports(PACKAGE / "engine.py")
    assert not [n for n in imported if n.startswith(("qmd_daemon.daemon", "qmd_daemon.cli"))]


def test_clients_use_the_standard_library_only() -> None:
    stdlib = set(sys.stdlib_module_names)
    for path in CLIENTS.rglob("*.py"):
        third_party = {n.split(".")[0] for n in _imports(path)} - stdlib - {"__future__"}
        assert not third_party, f"{path.name} imports {third_party}"
