"""Deep vectors kept after their chunks go (store/kept_vectors.py), on both backends: real files
written through the real indexer into SQLite and into a real PostgreSQL + pgvector, real vectors
(made from each chunk's text, so a copy is checked to be that text's vector)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qmd_daemon.config import CollectionConfig
from qmd_daemon.ingest.indexer import update_collection
from qmd_daemon.settings import Settings
from qmd_daemon.store import kept_vectors
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase
from qmd_daemon.store.postgres.vectors import PostgresVectorIndex
from qmd_daemon.store.vectors import VectorIndex

REPO = Path(__file__).resolve().parents[2]
DIM = 8


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A real source tree: the store's PostgreSQL modules and the text package."""
    root = tmp_path / "tree"
    for source in ("qmd_daemon/store/postgres", "qmd_daemon/text"):
        shutil.copytree(REPO / source, root / source, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(params=["sqlite float", "postgres float", "sqlite int8", "postgres int8"])
def backend(request: pytest.FixtureRequest, tmp_path: Path, home: Path) -> Iterator[tuple[Any, Any]]:
    """(chunk store, vector store) of one backend and quantization (SQLite int8, pgvector halfvec),
    the vector table made for a model."""
    kind, quantization = str(request.param).split()
    if kind == "sqlite":
        store: Any = IndexStore(tmp_path / "index.sqlite")
        vectors: Any = VectorIndex(store, quantization)
    else:
        store = PostgresChunkStore(PostgresDatabase(request.getfixturevalue("postgres_url")))
        vectors = PostgresVectorIndex(store.db, quantization)
    vectors.ensure("model-a", DIM)
    yield store, vectors
    store.close()


def _index(store: Any, root: Path, name: str = "repo") -> Any:
    return update_collection(store, CollectionConfig(name, root), Settings.from_env(), progress=False)


def _vector(content_hash: str) -> list[float]:
    """A unit vector of the chunk's content (its hash's bytes): equal text, equal vector."""
    raw = np.frombuffer(hashlib.sha256(content_hash.encode()).digest()[:DIM], dtype=np.uint8)
    values = raw.astype(np.float32) - 127.5
    return (values / np.linalg.norm(values)).tolist()


def _embed_all(vectors: Any) -> int:
    """What the embed job does: copies first, the model (here _vector) for the rest."""
    left = vectors.copy_identical(vectors.pending())
    return vectors.put([(cid, col, h, _vector(h)) for cid, col, h in left])


def _move(root: Path, source: str, aside: Path) -> None:
    (root / source).rename(aside)


def test_switching_back_copies_every_vector_and_none_is_embedded(
    backend: Any, tree: Path, tmp_path: Path
) -> None:
    store, vectors = backend
    _index(store, tree)
    first = vectors.pending()
    embedded = _embed_all(vectors)
    assert embedded > 50 and vectors.pending_count() == 0 and vectors.kept_count() == 0
    stored = vectors.vectors_of([cid for cid, _, _ in first])
    as_stored = {content_hash: stored[cid] for cid, _, content_hash in first}

    aside = tmp_path / "aside"
    _move(tree, "qmd_daemon/text", aside)  # a branch without these files
    gone = _index(store, tree)
    assert gone.chunks_removed > 10
    assert vectors.kept_count() > 10, "the deleted chunks' vectors were kept"
    searched = {cid for cid, _ in vectors.search(_vector("x"), [store.collection_id("repo")], 10_000)}
    assert len(searched) == embedded - gone.chunks_removed, "a search sees the live vectors only"
    assert set(store.chunks_by_ids(list(searched))) == searched

    aside.rename(tree / "qmd_daemon/text")  # switched back
    back = _index(store, tree)
    assert back.chunks_added == gone.chunks_removed
    pending = vectors.pending()
    assert len(pending) == back.chunks_added
    assert vectors.copy_identical(pending) == [], "every returning chunk took its kept vector"
    assert vectors.pending_count() == 0 and vectors.kept_count() == 0
    copied = vectors.vectors_of([cid for cid, _, _ in pending])
    for cid, _, content_hash in pending:  # each holds its own text's vector as first stored, no other
        assert np.allclose(copied[cid], as_stored[content_hash], atol=1e-6)
        assert np.allclose(copied[cid], _vector(content_hash), atol=0.02)
    hit = vectors.search(as_stored[pending[0][2]], [store.collection_id("repo")], 1)
    assert hit[0][1] == pytest.approx(1.0, abs=1e-2)  # the copy's code is searchable as the vector


def test_the_cap_drops_the_oldest(
    backend: Any, tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, vectors = backend
    _index(store, tree)
    _embed_all(vectors)
    _move(tree, "qmd_daemon/text", tmp_path / "older")
    _index(store, tree)
    older = vectors.kept_count()
    _move(tree, "qmd_daemon/store/postgres", tmp_path / "newer")
    _index(store, tree)
    newer = vectors.kept_count() - older
    assert older > 0 and newer > 0
    monkeypatch.setattr(kept_vectors, "KEEP_MIN", newer)
    monkeypatch.setattr(kept_vectors, "KEEP_SHARE", 0.0)
    assert vectors.trim_kept() > 0
    assert vectors.kept_count() == newer
    assert vectors.trim_kept() == 0

    (tmp_path / "older").rename(tree / "qmd_daemon/text")
    (tmp_path / "newer").rename(tree / "qmd_daemon/store/postgres")
    back = _index(store, tree)
    left = vectors.copy_identical(vectors.pending())
    assert 0 < len(left) < back.chunks_added, "the newer deletions' vectors came back, the older ones' not"
    paths = {row.path for row in store.chunks_by_ids([cid for cid, _, _ in left]).values()}
    assert paths and all(p.startswith("qmd_daemon/text/") for p in paths)


def test_a_model_change_drops_the_kept_vectors(backend: Any, tree: Path, tmp_path: Path) -> None:
    store, vectors = backend
    _index(store, tree)
    _embed_all(vectors)
    _move(tree, "qmd_daemon/text", tmp_path / "aside")
    _index(store, tree)
    assert vectors.kept_count() > 0
    assert vectors.ensure("model-b", DIM) is True
    assert vectors.kept_count() == 0
    (tmp_path / "aside").rename(tree / "qmd_daemon/text")
    _index(store, tree)
    assert len(vectors.copy_identical(vectors.pending())) == vectors.pending_count() > 0


def test_removing_a_collection_forgets_its_kept_vectors(backend: Any, tree: Path, tmp_path: Path) -> None:
    store, vectors = backend
    _index(store, tree)
    _index(store, tree / "qmd_daemon/text", name="other")
    _embed_all(vectors)
    _move(tree, "qmd_daemon/store/postgres", tmp_path / "aside")
    _index(store, tree)  # repo's postgres files go: kept, tagged with repo
    assert vectors.kept_count() > 0
    with store.transaction():
        store.remove_collection("repo")
    assert vectors.kept_count() == 0, "neither its earlier deletions nor its last chunks' vectors stay"
    assert vectors.pending_count() == 0  # `other` keeps its own vectors


def test_a_deletion_rolled_back_keeps_nothing(backend: Any, tree: Path) -> None:
    store, vectors = backend
    _index(store, tree)
    _embed_all(vectors)
    collection_id = store.collection_id("repo")
    ids = [state.id for state in store.file_states(collection_id).values()]
    with pytest.raises(RuntimeError), store.transaction():
        store.delete_files(ids)
        raise RuntimeError("killed mid-update")
    assert vectors.kept_count() == 0 and vectors.pending_count() == 0


def _away_and_back_copies_all(store: Any, vectors: Any, tree: Path, tmp_path: Path) -> None:
    """A folder's files deleted (their vectors kept), then back: every returning chunk copied."""
    _move(tree, "qmd_daemon/text", tmp_path / "aside")
    gone = _index(store, tree)
    assert vectors.kept_count() > 0
    (tmp_path / "aside").rename(tree / "qmd_daemon/text")
    assert _index(store, tree).chunks_added == gone.chunks_removed
    assert vectors.copy_identical(vectors.pending()) == []


def test_an_index_embedded_by_older_code_keeps_vectors_after_its_upgrade(tree: Path, tmp_path: Path) -> None:
    """SQLite: an index of schema 9 (its delete trigger deleted the vector, no kept table) is
    upgraded on open, and from then on a deleted chunk's vector is kept."""
    path = tmp_path / "old.sqlite"
    store = IndexStore(path)
    VectorIndex(store).ensure("model-a", DIM)
    _index(store, tree)
    _embed_all(VectorIndex(store))
    with store.transaction():
        store.conn.execute("DROP TRIGGER chunk_vectors_delete")
        store.conn.execute("""CREATE TRIGGER chunk_vectors_delete AFTER DELETE ON chunks BEGIN
                                DELETE FROM chunk_vectors WHERE rowid = old.id; END""")
        store.conn.execute("DROP TABLE kept_vectors")
        store.conn.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")
    store.close()

    store = IndexStore(path)
    vectors = VectorIndex(store)
    try:
        _away_and_back_copies_all(store, vectors, tree, tmp_path)
    finally:
        store.close()


def test_a_postgres_index_embedded_before_schema_4_keeps_vectors_after_its_upgrade(
    postgres_url: str, tree: Path, tmp_path: Path, home: Path
) -> None:
    from qmd_daemon.store.postgres.schema import migrate

    store = PostgresChunkStore(PostgresDatabase(postgres_url))
    vectors = PostgresVectorIndex(store.db)
    vectors.ensure("model-a", DIM)
    _index(store, tree)
    _embed_all(vectors)
    with store.db.transaction():
        for statement in ("DROP TRIGGER chunks_keep_vector ON chunks", "DROP FUNCTION qmd_keep_vector",
                          "DROP TABLE kept_vectors", "DROP SEQUENCE kept_vectors_order",
                          # and schema 5's postings (store/postgres/postings.py)
                          "DROP FUNCTION qmd_chunk_postings() CASCADE", "DROP TABLE chunk_terms, lexemes",
                          "UPDATE meta SET value = '3' WHERE key = 'schema_version'"):
            store.db.execute(statement)
    migrate(store.db)
    try:
        _away_and_back_copies_all(store, vectors, tree, tmp_path)
    finally:
        store.close()
