from pathlib import Path

import pytest

from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.store.connection import sqlite
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.lexical_query import Word
from qmd_daemon.store.schema import SCHEMA_VERSION
from qmd_daemon.text.chunk_model import Chunk, Definition


def test_fresh_index_has_schema_and_vectors(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "i.sqlite")
    assert store.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION
    )
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.supports_vectors, "sqlite-vec should load through the extension-capable binding"
    store.close()


def _run_sql(path: Path, statement: str) -> None:
    """One statement on the database file, committed, through a connection of its own."""
    conn = sqlite.connect(str(path))
    conn.execute(statement)
    conn.commit()
    conn.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    IndexStore(path).close()
    _run_sql(path, "UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(IndexDatabaseError, match="newer"):
        IndexStore(path)


def test_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "i.sqlite"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(IndexDatabaseError, match="not a usable SQLite database"):
        IndexStore(path)
    assert path.read_bytes().startswith(b"this is not sqlite")


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    _run_sql(path, "CREATE TABLE t (x)")
    with pytest.raises(IndexDatabaseError, match="not a qmd-daemon index"):
        IndexStore(path)


def _chunk(text: str, start: int, name: str) -> Chunk:
    return Chunk(start, start + text.count("\n"), text, [Definition(name, "function", start)])


def _write_m(store: IndexStore, cid: int, version: int, lines: int, chunks: list[Chunk]) -> tuple[int, int]:
    """m.py at VERSION (its size, mtime and hash follow it): (chunks added, chunks removed)."""
    return store.write_file(
        cid,
        "m.py",
        size=version,
        mtime_ns=version,
        content_hash=f"h{version}",
        language="python",
        kind="code",
        line_count=lines,
        chunks=chunks,
    )


def test_write_file_replaces_only_changed_chunks_and_fts_follows(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "i.sqlite")
    with store.transaction():
        cid = store.ensure_collection("c", tmp_path)
        a, b = (
            _chunk("def alpha():\n    return 1", 1, "alpha"),
            _chunk("def beta():\n    return 2", 4, "beta"),
        )
        assert _write_m(store, cid, 1, 5, [a, b]) == (2, 0)
    ids_before = {r[0]: r[1] for r in store.conn.execute("SELECT hash, id FROM chunks")}
    with store.transaction():
        c = _chunk("def gamma():\n    return 3", 4, "gamma")
        moved_a = Chunk(2, 3, a.text, a.definitions)
        assert _write_m(store, cid, 2, 6, [moved_a, c]) == (1, 1)
    rows = store.conn.execute("SELECT hash, id, start_line FROM chunks ORDER BY seq").fetchall()
    assert rows[0][1] == ids_before[a.content_hash] and rows[0][2] == 2
    fts = [r[0] for r in store.conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'beta'")]
    assert fts == []
    assert len(store.fts_search(Word("gamma"), [cid], 10, (1.0, 1.0, 1.0))) == 1
    with store.transaction():
        store.delete_files([store.file_states(cid)["m.py"].id])
    assert store.conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0] == 0
    assert store.conn.execute("SELECT count(*) FROM definitions").fetchone()[0] == 0
    store.close()


def test_failed_transaction_rolls_back(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "i.sqlite")
    with pytest.raises(RuntimeError), store.transaction():
        store.ensure_collection("c", tmp_path)
        raise RuntimeError("boom")
    assert store.collection_id("c") is None
    store.close()


def test_index_file_is_private_to_the_user(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "i.sqlite"
    IndexStore(path).close()
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    wal = Path(str(path) + "-wal")
    assert not wal.exists() or wal.stat().st_mode & 0o777 == 0o600
