"""open_backend: index.yml's `backend:` picks the engine; what it cannot open is one clear line."""

import inspect
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from qmd_daemon.errors import ConfigError, IndexDatabaseError
from qmd_daemon.settings import Settings
from qmd_daemon.store.backends import open_backend, storage_error
from qmd_daemon.store.connection import sqlite
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.llm_cache import SqliteLLMCache
from qmd_daemon.store.protocols import ChunkStore, StoredLLMCache, VectorStore
from qmd_daemon.store.vectors import VectorIndex
from tests.conftest import run_cli


def _settings(home: Path, index_yml: str, database_url: str | None = None) -> Settings:
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "config" / "index.yml").write_text(index_yml, encoding="utf-8")
    return Settings(home / "config", home / "cache", home / "state",
                    home / "cache" / "index.sqlite", database_url=database_url)


def test_sqlite_is_the_default_and_opens_the_index_file(tmp_path: Path) -> None:
    backend = open_backend(_settings(tmp_path, "collections: {}\n"))
    try:
        assert isinstance(backend.chunks, IndexStore) and (tmp_path / "cache" / "index.sqlite").is_file()
        assert backend.chunks.supports_vectors is True and backend.chunks.derived == {}
        assert backend.vectors is not None and backend.vectors("int8").active_model() is None
        backend.llm_cache.put("k", "v")
        assert backend.llm_cache.get("k") == "v" and backend.llm_cache.entries() == 1
    finally:
        backend.close()


def test_postgres_without_its_driver_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install without the [postgres] extra: psycopg cannot be imported (None in sys.modules
    makes Python's own import fail, as a missing package does)."""
    for name in [m for m in sys.modules if m.startswith("qmd_daemon.store.postgres")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)
    settings = _settings(tmp_path, "backend: postgres\ndatabase_url: postgresql://localhost/qmd\n")
    with pytest.raises(ConfigError, match="backend: postgres, but psycopg is not installed"):
        open_backend(settings)
    assert not (tmp_path / "cache" / "index.sqlite").exists(), "no SQLite index is made in its place"
    # a database_url alone means postgres: the line said `says backend: postgres`, a line the
    # user's index.yml does not have, and not how to stay local
    alone = _settings(tmp_path / "alone", "database_url: postgresql://localhost/qmd\n")
    with pytest.raises(ConfigError) as info:
        open_backend(alone)
    assert "says database_url without a backend: line" in str(info.value)
    assert "`backend: sqlite` keeps the local file" in str(info.value)
    assert "psycopg is not installed" in str(info.value)


def test_postgres_needs_a_database_url(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs database_url"):
        open_backend(_settings(tmp_path, "backend: postgres\n"))


def test_a_database_url_alone_means_postgres_and_backend_sqlite_keeps_it_local(
    tmp_path: Path, postgres_url: str
) -> None:
    """A user who wrote only `database_url:` got a local SQLite index, silently (status named the
    file, easy to miss); an explicit `backend: sqlite` still wins."""
    backend = open_backend(_settings(tmp_path / "a", f"database_url: {postgres_url}\n"))
    try:
        assert backend.location.startswith("postgresql") and backend.homes is not None
        assert not (tmp_path / "a" / "cache" / "index.sqlite").exists()
    finally:
        backend.close()
    local = open_backend(_settings(tmp_path / "b", f"backend: sqlite\ndatabase_url: {postgres_url}\n"))
    try:
        assert isinstance(local.chunks, IndexStore) and (tmp_path / "b" / "cache" / "index.sqlite").is_file()
    finally:
        local.close()


def test_an_unknown_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'backend' must be one of sqlite, postgres"):
        open_backend(_settings(tmp_path, "backend: mysql\n"))


def test_the_cli_says_the_server_is_unreachable_in_one_line(tmp_path: Path) -> None:
    _settings(tmp_path, "backend: postgres\n")
    url = f"postgresql://qmd:s3cret@/qmd?host={tmp_path}"  # no server listens on this folder
    proc = run_cli("status", env_home=tmp_path, QMD_DATABASE_URL=url)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("qmd-daemon: error: cannot reach the index database (postgresql qmd@")
    assert "s3cret" not in line


def test_a_driver_error_reaching_a_front_end_becomes_the_projects_type(tmp_path: Path) -> None:
    conn = sqlite.connect(str(tmp_path / "x.sqlite"))
    with pytest.raises(sqlite.OperationalError) as raised:
        conn.execute("SELECT * FROM no_such_table")
    readable = storage_error(raised.value)
    assert isinstance(readable, IndexDatabaseError) and "could not do that right now" in str(readable)
    assert storage_error(ValueError("not a storage error")) is None


def _parameters(function: Callable[..., object]) -> list[tuple[str, object, object]]:
    """(name, kind, default) of each parameter: what a caller relies on."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


def _methods(protocol: type) -> dict[str, list[tuple[str, object, object]]]:
    return {
        name: _parameters(member)
        for name, member in vars(protocol).items()
        if callable(member) and not name.startswith("_")
    }


@pytest.mark.parametrize(
    ("protocol", "implementation"),
    [(ChunkStore, IndexStore), (VectorStore, VectorIndex), (StoredLLMCache, SqliteLLMCache)],
)
def test_the_sqlite_classes_implement_every_protocol_method_as_declared(
    protocol: type, implementation: type
) -> None:
    """The layers above store/ call only the protocols: a method the SQLite class lacks, or takes
    other parameters for, would pass review and fail at run time on the other backend's side."""
    declared = _methods(protocol)
    assert declared, "the protocol declares methods"
    for name, parameters in declared.items():
        assert _parameters(getattr(implementation, name)) == parameters, name
