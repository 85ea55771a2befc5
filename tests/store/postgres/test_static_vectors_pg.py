"""Postgres-only parts of the static tier's store (the engine-level tests run on both backends in
tests/test_static_tier.py): a database of schema 1 gains the tables; two machines pooling the
same chunks count its tokens once; a removed collection takes its vectors and counts with it.
Real PostgreSQL, real chunker; the vectors are fixed numbers (no model is needed for the store)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qmd_daemon.config import CollectionConfig
from qmd_daemon.ingest.indexer import update_collection
from qmd_daemon.settings import Settings
from qmd_daemon.store.postgres import schema
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase
from qmd_daemon.store.postgres.static_vectors import PostgresStaticVectors


def _indexed(url: str, root: Path) -> tuple[PostgresChunkStore, int]:
    root.mkdir()
    for n in range(3):
        (root / f"m{n}.py").write_text(f"def handler_{n}(request):\n    return {n}\n", encoding="utf-8")
    store = PostgresChunkStore(PostgresDatabase(url))
    update_collection(store, CollectionConfig("c", root), Settings.from_env(), progress=False)
    collection_id = store.collection_id("c")
    assert collection_id is not None
    return store, collection_id


def _rows(vectors: PostgresStaticVectors) -> list[tuple[int, int, str, object, set[int]]]:
    """Every pending chunk with the vector (1, 2, 3, 4) scaled by its id and the tokens 7 and 8."""
    ramp = np.arange(1, 5, dtype=np.float32)
    return [(cid, col, h, ramp * cid, {7, 8}) for cid, col, h in vectors.pending()]


def test_a_schema_1_database_gains_the_static_tables(postgres_url: str, home: Path, tmp_path: Path) -> None:
    db = PostgresDatabase(postgres_url)
    with db.transaction():  # what the code before the static tier made
        for step in schema.MIGRATIONS[1]:
            db.execute(step)
        schema.set_meta(db, "schema_version", "1")
    db.close()
    store, collection_id = _indexed(postgres_url, tmp_path / "repo")
    assert schema.current_version(store.db) == schema.SCHEMA_VERSION >= 2
    vectors = PostgresStaticVectors(store.db)
    assert vectors.coverage() == (0, 3) and len(vectors.pending([collection_id])) == 3
    store.close()


def test_two_machines_pooling_the_same_chunks_count_them_once(
    postgres_url: str, home: Path, tmp_path: Path
) -> None:
    store, collection_id = _indexed(postgres_url, tmp_path / "repo")
    first, second = PostgresStaticVectors(store.db), PostgresStaticVectors(PostgresDatabase(postgres_url))
    first.ensure("static-a")
    second.ensure("static-a")
    rows = _rows(first)
    assert [r[0] for r in _rows(second)] == [r[0] for r in rows]  # both read the same pending chunks
    assert first.put(rows) == 3
    assert second.put(rows) == 0, "a vector already of the chunk's text is not written again"
    assert first.token_df(collection_id, [7, 8, 9]) == (3, {7: 3, 8: 3})
    got = second.vectors_of([r[0] for r in rows])
    assert {cid: col for cid, (col, _v) in got.items()} == {r[0]: collection_id for r in rows}
    for chunk_id, (_col, vector) in got.items():  # int8, the largest component 127
        assert vector.tolist() == [32.0, 64.0, 95.0, 127.0], chunk_id
    assert first.coverage([collection_id]) == (3, 3)
    second.db.close()
    store.close()


def test_a_removed_collection_takes_its_vectors_and_counts(
    postgres_url: str, home: Path, tmp_path: Path
) -> None:
    store, collection_id = _indexed(postgres_url, tmp_path / "repo")
    vectors = PostgresStaticVectors(store.db)
    vectors.ensure("static-a")
    vectors.put(_rows(vectors))
    store.remove_collection("c")
    assert vectors.token_df(collection_id, [7]) == (0, {})
    assert store.db.execute("SELECT count(*) FROM static_vectors").fetchone() == (0,)
    assert vectors.coverage() == (0, 0)
    assert vectors.ensure("static-b") is True  # another model: the old vectors are dropped
    store.close()
