"""`qmd-daemon migrate --to postgres`: a real small index (real files, the real chunker, synthetic
vectors) copied into a real PostgreSQL answers the same chunks and the same KNN."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qmd_daemon.store.lexical_query import AnyOf, Phrase, Word
from qmd_daemon.store.llm_cache import SqliteLLMCache
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase
from qmd_daemon.store.postgres.vectors import PostgresVectorIndex
from qmd_daemon.store.vectors import VectorIndex
from tests.conftest import REPO_ROOT, run_cli
from tests.postgres_server import statistics_match_a_recount

DIM = 16
WEIGHTS = (2.0, 4.0, 1.0)  # search/lexical.py DEFAULT_WEIGHTS: path, symbols, body
CHUNK_KEY = """SELECT c.id, col.name, f.path, c.seq, c.start_line, c.end_line, c.text, c.symbols, c.hash
               FROM chunks c JOIN files f ON f.id = c.file_id
               JOIN collections col ON col.id = f.collection_id"""


def _vector(content_hash: str) -> list[float]:
    """A fixed unit vector per content (identical chunks share it, as embedding gives them)."""
    rng = np.random.default_rng(int(hashlib.sha256(content_hash.encode()).hexdigest()[:8], 16))
    v = rng.standard_normal(DIM)
    return (v / np.linalg.norm(v)).tolist()


def _local_index(engine: Any, tmp_path: Path) -> None:
    """Two collections of the repository's own files, vectors for all, two cached results."""
    for name, sources in (("store", "qmd_daemon/store"), ("docs", "docs")):
        root = tmp_path / name
        shutil.copytree(REPO_ROOT / sources, root, ignore=shutil.ignore_patterns("__pycache__", "postgres"))
        # a doc citing code, so the collection has doc-to-code links to carry over
        (root / "NOTES.md").write_text("# KNN\n\nThe search lives in `vectors.py` and `binary_codes.py`.\n")
        engine.update([engine.add_collection(root, name=name).name])
    vectors = VectorIndex(engine.store)
    vectors.ensure("synthetic-16", DIM)
    vectors.put([(cid, col, h, _vector(h)) for cid, col, h in vectors.pending()])
    cache = SqliteLLMCache(engine.store)
    cache.put("rerank-key", "0.5")
    cache.put("expand-key", '["lex: x"]')


def _chunks(rows: list[tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
    return {r[0]: tuple(r[1:]) for r in rows}


def test_migrate_copies_chunks_vectors_and_cache(
    engine: Any, home: Path, tmp_path: Path, postgres_url: str
) -> None:
    _local_index(engine, tmp_path)
    local = _chunks(engine.store.conn.execute(CHUNK_KEY).fetchall())
    local_defs = sorted(engine.store.conn.execute("SELECT name, kind, line FROM definitions").fetchall())
    local_links = engine.store.conn.execute("SELECT count(*) FROM links").fetchone()[0]
    engine.close()

    done = run_cli(
        "migrate", "--to", "postgres", "--database-url", postgres_url, "--json", env_home=home, check=True
    )
    report = json.loads(done.stdout)
    assert sorted(report["copied"]) == ["docs", "store"] and report["skipped"] == []
    assert report["chunks"] == report["vectors"] == len(local) and report["cache_entries"] == 2

    db = PostgresDatabase(postgres_url)
    remote = _chunks(db.execute(CHUNK_KEY).fetchall())
    assert sorted(remote.values()) == sorted(local.values())
    assert sorted(tuple(r) for r in db.execute("SELECT name, kind, line FROM definitions")) == local_defs
    assert db.execute("SELECT count(*) FROM links").fetchone()[0] == local_links > 0
    assert db.execute("SELECT value FROM llm_cache WHERE key = 'rerank-key'").fetchone()[0] == "0.5"
    assert statistics_match_a_recount(postgres_url)

    # The same KNN: the top 10 of each backend, named by (collection, path, seq), for a few queries.
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    again = Engine(Settings.from_env())
    sqlite_vectors, pg_vectors = VectorIndex(again.store), PostgresVectorIndex(db)
    local_ids = [r[0] for r in again.store.conn.execute("SELECT id FROM collections")]
    remote_ids = [r[0] for r in db.execute("SELECT id FROM collections")]
    assert pg_vectors.active_model() == ("synthetic-16", DIM, "float")
    for content_hash in ("a", "b", "c"):
        query = _vector(content_hash)
        want = [local[i][:3] for i, _ in sqlite_vectors.exact_search(query, local_ids, 10)]
        assert [remote[i][:3] for i, _ in pg_vectors.search(query, remote_ids, 10)] == want
    # The same keyword ranking: the tsvectors and BM25 statistics the copy made are a write's.
    pg_store = PostgresChunkStore(db)
    for query in (Word("vector"), AnyOf((Word("search"), Word("binary_codes"))), Phrase("sqlite vec")):
        # ties (the two collections' identical NOTES.md) in place order: ids differ by backend
        want = sorted((local[i][:3], s) for i, s in again.store.fts_search(query, local_ids, 50, WEIGHTS))
        got = sorted((remote[i][:3], s) for i, s in pg_store.fts_search(query, remote_ids, 50, WEIGHTS))
        assert [k for k, _ in got] == [k for k, _ in want] != []
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)
    again.close()

    rerun = json.loads(
        run_cli(
            "migrate", "--to", "postgres", "--database-url", postgres_url, "--json", env_home=home, check=True
        ).stdout
    )
    assert rerun["copied"] == [] and sorted(rerun["skipped"]) == ["docs", "store"]
    assert db.execute("SELECT count(*) FROM chunks").fetchone()[0] == len(local)  # nothing doubled
    db.close()


def test_migrate_to_an_unreachable_server_is_one_line(engine: Any, home: Path, tmp_path: Path) -> None:
    for url in (f"postgresql://nobody@/qmd?host={tmp_path / 'no-server'}", "not a url at all"):
        failed = run_cli("migrate", "--to", "postgres", "--database-url", url, env_home=home)
        assert failed.returncode == 1, failed.stderr
        assert failed.stderr.startswith("qmd-daemon: error: ") and failed.stderr.count("\n") == 1, (
            failed.stderr
        )
        assert "Traceback" not in failed.stderr


@pytest.mark.parametrize("quantization", ["float", "int8"])
def test_migrate_copies_kept_vectors_so_switching_back_embeds_nothing(
    engine: Any, home: Path, tmp_path: Path, postgres_url: str, quantization: str
) -> None:
    """A branch left before the migration: its chunks' kept vectors travel with the index, and
    switching back on the server gives every returning chunk its vector without the embedder."""
    from qmd_daemon.config import CollectionConfig
    from qmd_daemon.ingest.indexer import update_collection
    from qmd_daemon.settings import Settings

    root = tmp_path / "repo"
    for sources in ("qmd_daemon/store", "qmd_daemon/text"):
        shutil.copytree(REPO_ROOT / sources, root / sources, ignore=shutil.ignore_patterns("__pycache__"))
    engine.update([engine.add_collection(root, name="repo").name])
    vectors = VectorIndex(engine.store, quantization)
    vectors.ensure("synthetic-16", DIM)
    vectors.put([(cid, col, h, _vector(h)) for cid, col, h in vectors.pending()])
    (root / "qmd_daemon/text").rename(tmp_path / "aside")  # a branch without these files
    engine.update(["repo"])
    kept = dict(engine.store.conn.execute("SELECT hash, embedding FROM kept_vectors").fetchall())
    assert len(kept) > 10
    engine.close()

    report = json.loads(run_cli(
        "migrate", "--to", "postgres", "--database-url", postgres_url, "--json", env_home=home, check=True
    ).stdout)
    assert report["kept_vectors"] == len(kept)
    db = PostgresDatabase(postgres_url)
    pg_vectors = PostgresVectorIndex(db)
    assert pg_vectors.kept_count() == len(kept)
    assert db.execute("SELECT count(DISTINCT collection_id) FROM kept_vectors").fetchone()[0] == 1
    assert db.execute(  # the server's id of the collection, not the local one
        "SELECT count(*) FROM kept_vectors k JOIN collections c ON c.id = k.collection_id "
        "WHERE c.name = 'repo'"
    ).fetchone()[0] == len(kept)

    (tmp_path / "aside").rename(root / "qmd_daemon/text")  # switched back, on the server
    store = PostgresChunkStore(db)
    back = update_collection(store, CollectionConfig("repo", root), Settings.from_env(), progress=False)
    pending = pg_vectors.pending()
    assert len(pending) == back.chunks_added > 10
    assert pg_vectors.copy_identical(pending) == [], "every returning chunk took its kept vector"
    assert pg_vectors.kept_count() == 0
    copied = pg_vectors.vectors_of([cid for cid, _, _ in pending])
    for cid, _, content_hash in pending:  # its own text's vector (int8: as stored, cosine-equal)
        got = np.asarray(copied[cid])
        assert float(got @ _vector(content_hash)) / float(np.linalg.norm(got)) == pytest.approx(1.0, abs=0.02)
    db.close()
