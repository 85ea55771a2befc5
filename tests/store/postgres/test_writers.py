"""Postgres-only: several machines write one shared index. Two writers on one collection take
turns (advisory lock) and never double a file; a connection dropped mid-update leaves nothing of
that update, and the retry on the same store succeeds."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest

from qmd_daemon.config import CollectionConfig
from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.ingest.chunking import chunk_text
from qmd_daemon.ingest.indexer import update_collection
from qmd_daemon.settings import Settings
from qmd_daemon.store.lexical_query import Word
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase
from tests.postgres_server import statistics_match_a_recount

REPO = Path(__file__).resolve().parents[3]


def _tree(root: Path, count: int) -> Path:
    root.mkdir()
    for n in range(count):
        (root / f"module_{n}.py").write_text(
            f'def handler_{n}(request):\n    """Answer request {n} with a cookie."""\n    return {n}\n',
            encoding="utf-8",
        )
    return root


def _counts(url: str) -> tuple[int, int, int]:
    with psycopg.connect(url) as conn:
        files = conn.execute("SELECT count(*), count(DISTINCT (collection_id, path)) FROM files").fetchone()
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()
    return int(files[0]), int(files[1]), int(chunks[0])


def test_two_writers_on_one_collection_neither_fails_nor_doubles(
    postgres_url: str, tmp_path: Path, home: Path
) -> None:
    root = _tree(tmp_path / "repo", 60)
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def writer() -> None:
        try:  # each opens (and may migrate) the new database at once, like two machines
            store = PostgresChunkStore(PostgresDatabase(postgres_url))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            start.abort()
            errors.append(exc)
            return
        try:
            start.wait(30)
            update_collection(store, CollectionConfig("shared", root), Settings.from_env(), progress=False)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            store.close()

    # daemon threads: two writers deadlocked on each other fail the test instead of hanging it
    threads = [threading.Thread(target=writer, daemon=True) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(t.is_alive() for t in threads), "the writers are stuck on each other"
    assert errors == []
    files, distinct, chunks = _counts(postgres_url)
    assert files == distinct == 60 and chunks == 60
    store = PostgresChunkStore(PostgresDatabase(postgres_url))
    cid = store.collection_id("shared")
    assert store.fts_count(Word("cookie"), [cid]) == 60  # the statistics counted each chunk once
    assert store.collection_stats()[0]["chunks"] == 60
    assert statistics_match_a_recount(postgres_url)
    store.close()


def test_a_connection_killed_mid_update_leaves_nothing_and_the_retry_succeeds(
    postgres_url: str, postgres_server: str, tmp_path: Path
) -> None:
    store = PostgresChunkStore(PostgresDatabase(postgres_url))
    source = (REPO / "qmd_daemon/store/index_store.py").read_text(encoding="utf-8")
    chunks = chunk_text("index_store.py", source, "python")
    with store.transaction():
        cid = store.ensure_collection("repo", tmp_path)
    backend = store.db.connection().info.backend_pid

    def write(path: str) -> None:
        store.write_file(cid, path, size=len(source), mtime_ns=1, content_hash=path, language="python",
                         kind="code", line_count=source.count("\n") + 1, chunks=chunks)

    lost = "lost the index database.*run it again"
    with pytest.raises(IndexDatabaseError, match=lost), store.transaction():
        write("a.py")
        with psycopg.connect(postgres_server, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        write("b.py")
    assert _counts(postgres_url) == (0, 0, 0)
    with store.transaction():  # the same store opens a new connection and the retry lands whole
        write("a.py")
        write("b.py")
    assert _counts(postgres_url) == (2, 2, 2 * len(chunks))
    assert statistics_match_a_recount(postgres_url)  # the killed attempt's counts went with it
    assert store.fts_count(Word("transaction"), [cid]) > 0
    store.close()
