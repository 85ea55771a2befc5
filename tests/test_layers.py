"""docs/architecture.md's import rules, checked on the source: lower layers never reach up."""

import ast
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
PACKAGE = REPOSITORY / "qmd_daemon"
CLIENTS = REPOSITORY / "clients"

_FRONT_ENDS = ("qmd_daemon.daemon", "qmd_daemon.cli", "qmd_daemon.mcp_server", "qmd_daemon.setup")
_PASSES = ("qmd_daemon.vectorize", "qmd_daemon.static_vectorize")
_ABOVE_SEARCH = ("qmd_daemon.search", "qmd_daemon.engine", *_PASSES, *_FRONT_ENDS)

# layer (a package or a top-level module of qmd_daemon) -> what it must never import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "store": ("qmd_daemon.ingest", "qmd_daemon.models", *_ABOVE_SEARCH),
    "ingest": ("qmd_daemon.models", *_ABOVE_SEARCH),
    "models": ("qmd_daemon.ingest", "qmd_daemon.store", *_ABOVE_SEARCH),
    "search": ("qmd_daemon.engine", *_PASSES, *_FRONT_ENDS),
    "vectorize": ("qmd_daemon.ingest", "qmd_daemon.search", "qmd_daemon.engine", *_FRONT_ENDS),
    "static_vectorize": ("qmd_daemon.ingest", "qmd_daemon.search", "qmd_daemon.engine", *_FRONT_ENDS),
    "engine": _FRONT_ENDS,
    "daemon": ("qmd_daemon.cli", "qmd_daemon.mcp_server", "qmd_daemon.setup"),
    "mcp_server": ("qmd_daemon.daemon", "qmd_daemon.cli", "qmd_daemon.setup"),
    "demo": ("qmd_daemon.daemon", "qmd_daemon.cli", "qmd_daemon.mcp_server", "qmd_daemon.setup"),
    "setup": ("qmd_daemon.daemon", "qmd_daemon.cli", "qmd_daemon.store", "qmd_daemon.ingest"),
    "cli": ("qmd_daemon.store.connection", "qmd_daemon.store.index_store", "qmd_daemon.store.vectors"),
}
# a layer's files may import only these parts of the project (besides the layer itself)
# (atomic_files: nothing of the project, the installer imports it before any dependency is there;
# the base modules every layer imports: one another only)
_BASE = (
    "settings", "config", "errors", "locks", "numeric", "file_types", "atomic_files", "progress",
    "secret_mask",
)
ONLY: dict[str, tuple[str, ...]] = {
    "text": ("qmd_daemon.errors",),
    **{base: tuple(f"qmd_daemon.{b}" for b in _BASE) for base in _BASE},
    "atomic_files": (),
}
DRIVERS = ("sqlite3", "pysqlite3", "sqlite_vec", "psycopg")


def _imports(path: Path, root: Path = REPOSITORY) -> set[str]:
    """Every module a file names, with `from X import Y` also as X.Y (Y may be a module) and a
    relative import resolved against the file's package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = list(path.relative_to(root).parent.parts)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{a.name}" for a in node.names)
    return names


def _files(layer: str) -> list[Path]:
    module = PACKAGE / f"{layer}.py"
    files = [module] if module.exists() else sorted((PACKAGE / layer).rglob("*.py"))
    assert files, f"no source for layer {layer}"
    return files


def _reaching(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_import_reader_sees_every_form(tmp_path: Path) -> None:
    source = tmp_path / "qmd_daemon" / "store" / "probe.py"
    source.parent.mkdir(parents=True)
    source.write_text(
        "import qmd_daemon.a\nfrom qmd_daemon import cli\nfrom qmd_daemon.store import connection\n"
        "from . import schema\nfrom ..search import lexical\n"
        "def f():\n    from qmd_daemon.engine import Engine\n"
    )
    found = _imports(source, root=tmp_path)
    assert {"qmd_daemon.a", "qmd_daemon.cli", "qmd_daemon.store.connection"} <= found
    assert {"qmd_daemon.store.schema", "qmd_daemon.search.lexical"} <= found, "relative imports resolved"
    assert "qmd_daemon.engine" in found, "imports inside functions count too"
    assert _reaching("qmd_daemon.cli", ("qmd_daemon.cli",))
    assert not _reaching("qmd_daemon.client", ("qmd_daemon.cli",))


def test_lower_layers_never_import_upper_ones() -> None:
    bad = []
    for layer, forbidden in FORBIDDEN.items():
        for path in _files(layer):
            imported = _imports(path)
            bad += [f"{path.relative_to(PACKAGE)} imports {n}" for n in imported if _reaching(n, forbidden)]
    assert bad == []


def test_text_and_the_base_modules_import_only_what_they_may() -> None:
    for layer, allowed in ONLY.items():
        for path in _files(layer):
            project = {n for n in _imports(path) if _reaching(n, ("qmd_daemon",))}
            stray = {n for n in project if not _reaching(n, (f"qmd_daemon.{layer}", *allowed))}
            assert not stray, f"{path.name} imports {stray}"


def test_nothing_above_the_store_imports_a_database_driver() -> None:
    bad = [
        f"{path.relative_to(PACKAGE)} imports {n}"
        for path in PACKAGE.rglob("*.py")
        if path.parent.name != "store" and "store" not in path.relative_to(PACKAGE).parts[:-1]
        for n in _imports(path)
        if _reaching(n, DRIVERS)
    ]
    assert bad == []


def test_clients_use_the_standard_library_only() -> None:
    stdlib = set(sys.stdlib_module_names)
    for path in CLIENTS.rglob("*.py"):
        third_party = {n.split(".")[0] for n in _imports(path)} - stdlib - {"__future__", "clients"}
        assert not third_party, f"{path.name} imports {third_party}"  # qmd_daemon included
