"""chunks_in: the chunks of a search's scope, counted once over the table when the scope is every
collection. Same number as the per-collection counts, on a real index of two of this repository's
packages in a temp home."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def test_chunks_in_counts_the_scope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "home"))
    engine = Engine(Settings.from_env())
    try:
        for package in ("search", "text"):
            shutil.copytree(REPO / "qmd_daemon" / package, tmp_path / package)
            engine.add_collection(tmp_path / package, package)
        engine.update(progress=False)
        store = engine.store
        search, text = engine.collection_ids(["search", "text"])
        assert 0 < store.chunk_count(text) < store.chunk_count(search)
        assert store.chunks_in([search]) == store.chunk_count(search)
        assert store.chunks_in([search, text]) == store.chunk_count(search) + store.chunk_count(text)
        assert store.chunks_in([]) == 0
        engine.remove_collection("text")
        assert store.chunks_in([search]) == store.chunk_count(search)
    finally:
        engine.close()


SQLITE_READ = 20  # sqlite3.h: the authorizer's action code for a read of a table's column


def _tables_read(store: object, fn: object) -> set[str]:
    """The tables SQLite authorized reads of while `fn` ran (a count(*) reads the table's name
    with an empty column)."""
    read: set[str] = set()

    def note(action: int, table: str | None, *_: object) -> int:
        if action == SQLITE_READ and table:
            read.add(table)
        return 0  # SQLITE_OK

    conn = store.conn  # type: ignore[attr-defined]
    conn.set_authorizer(note)
    try:
        fn()  # type: ignore[operator]
    finally:
        conn.set_authorizer(None)
    return read


def test_every_collection_is_fts5s_row_total_not_a_count_of_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All collections: FTS5's own total (one page), the same number as counting the chunks
    table (7.6 MB at 503k chunks, 180 ms with the index out of the page cache), through adds, an
    edit that drops chunks, a deleted file and a removed collection."""
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "home"))
    engine = Engine(Settings.from_env())
    store = engine.store

    def every() -> int:
        ids = [i for i in engine.collection_ids(list(engine.collections())) if i is not None]
        return store.chunks_in(ids)

    def counted() -> int:
        return int(store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0])

    try:
        assert every() == 0
        for package in ("search", "store"):
            shutil.copytree(REPO / "qmd_daemon" / package, tmp_path / package)
            engine.add_collection(tmp_path / package, package)
        engine.update(progress=False)
        assert every() == counted() > 0
        assert "chunks" not in _tables_read(store, every)
        (tmp_path / "search" / "pipeline.py").write_text("def only():\n    return 1\n")
        (tmp_path / "store" / "index_store.py").unlink()
        before = counted()
        engine.update(progress=False)
        assert counted() < before
        assert every() == counted()
        engine.remove_collection("store")
        assert every() == counted() == store.chunk_count(engine.collection_ids(["search"])[0])
        with store.transaction():  # inside a write, FTS5's total can lag: counted
            store.delete_files([int(r[0]) for r in store.conn.execute("SELECT id FROM files")])
            assert every() == counted() == 0
        assert every() == 0
    finally:
        engine.close()
