from pathlib import Path

from qmd_daemon.ingest.chunk_model import Chunk
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.vectors import VectorIndex


def _store_with_chunks(tmp_path: Path) -> tuple[IndexStore, int, int]:
    store = IndexStore(tmp_path / "i.sqlite")
    with store.transaction():
        a = store.ensure_collection("a", tmp_path)
        b = store.ensure_collection("b", tmp_path)
        for cid, path in ((a, "x.py"), (b, "y.py")):
            store.write_file(
                cid,
                path,
                size=1,
                mtime_ns=1,
                content_hash=path,
                language="python",
                kind="code",
                line_count=3,
                chunks=[Chunk(1, 1, "same text"), Chunk(2, 2, f"unique {path}")],
            )
    return store, a, b


def test_pending_copy_put_search_and_collection_filter(tmp_path: Path) -> None:
    store, a, b = _store_with_chunks(tmp_path)
    vectors = VectorIndex(store)
    assert vectors.ensure("model-1", 3) is False
    pending = vectors.pending()
    assert len(pending) == 4
    first = [p for p in pending if p[1] == a]
    assert (
        vectors.put(
            [
                (cid, col, h, [1.0, 0.0, 0.0] if i == 0 else [0.0, 1.0, 0.0])
                for i, (cid, col, h) in enumerate(first)
            ]
        )
        == 2
    )
    left = vectors.copy_identical(vectors.pending())
    assert len(left) == 1, "the identical chunk in collection b copies its vector instead of re-embedding"
    vectors.put([(left[0][0], b, left[0][2], [0.0, 0.0, 1.0])])
    assert vectors.pending_count() == 0
    hits_a = vectors.search([1.0, 0.0, 0.0], [a], k=5)
    assert len(hits_a) == 2 and abs(hits_a[0][1] - 1.0) < 1e-6
    hits_b = vectors.search([0.0, 0.0, 1.0], [b], k=5)
    assert [h[0] for h in hits_b][0] == left[0][0]
    store.close()


def test_model_change_drops_vectors_and_deleted_chunks_lose_theirs(tmp_path: Path) -> None:
    store, a, _b = _store_with_chunks(tmp_path)
    vectors = VectorIndex(store)
    vectors.ensure("model-1", 3)
    vectors.put([(cid, col, h, [1.0, 1.0, 0.0]) for cid, col, h in vectors.pending()])
    assert vectors.pending_count() == 0
    with store.transaction():
        store.delete_files([store.file_states(a)["x.py"].id])
    assert store.conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0] == 2
    assert vectors.ensure("model-2", 4) is True
    assert vectors.pending_count() == 2
    store.close()


def test_int8_quantization_round_trip(tmp_path: Path) -> None:
    store, a, _b = _store_with_chunks(tmp_path)
    vectors = VectorIndex(store, quantization="int8")
    vectors.ensure("model-1", 4)
    rows = vectors.pending([a])
    (one, a, one_hash), (two, a, two_hash) = rows
    vectors.put([(one, a, one_hash, [0.9, 0.1, 0.0, 0.0]), (two, a, two_hash, [0.0, 0.0, 0.2, 0.9])])
    assert vectors.search([1.0, 0.0, 0.0, 0.0], [a], k=2)[0][0] == one
    store.close()


def test_identical_chunks_copy_int8_vectors_too(tmp_path: Path) -> None:
    store, a, b = _store_with_chunks(tmp_path)
    vectors = VectorIndex(store, quantization="int8")
    vectors.ensure("model-1", 3)
    first = [p for p in vectors.pending() if p[1] == a]
    vectors.put([(cid, col, h, [0.5, 0.5, 0.0]) for cid, col, h in first])
    left = vectors.copy_identical(vectors.pending())
    assert len(left) == 1, "the shared chunk of collection b was copied, its unique one was not"
    assert vectors.search([0.5, 0.5, 0.0], [b], k=2)
    store.close()


def test_queries_use_the_stored_quantization_until_vectors_are_rebuilt(tmp_path: Path) -> None:
    store, a, _b = _store_with_chunks(tmp_path)
    floats = VectorIndex(store)
    floats.ensure("model-1", 3)
    floats.put([(cid, col, h, [1.0, 0.0, 0.0]) for cid, col, h in floats.pending([a])])
    configured_int8 = VectorIndex(store, quantization="int8")
    assert len(configured_int8.search([1.0, 0.0, 0.0], [a], k=5)) == 2
    store.close()


def test_a_chunk_replaced_under_its_id_between_read_and_write_gets_no_stale_vector(tmp_path: Path) -> None:
    # review item D: chunks.id has no AUTOINCREMENT, so a deleted top id comes back for a new
    # chunk; a batch read before that and written after must not give the new chunk the old vector
    store, _a, b = _store_with_chunks(tmp_path)
    vectors = VectorIndex(store)
    vectors.ensure("model-1", 3)
    top_id, _col, old_hash = max(vectors.pending([b]))
    batch = store.chunks_by_ids([top_id])  # the embedding pass read the batch's text ...
    assert batch[top_id].text == "unique y.py" and batch[top_id].hash == old_hash
    new_chunks = [Chunk(1, 1, "same text"), Chunk(2, 2, "new text")]
    with store.transaction():  # ... updates removed the file and added another meanwhile
        store.delete_files([store.file_states(b)["y.py"].id])
    with store.transaction():
        store.write_file(b, "z.py", size=2, mtime_ns=2, content_hash="z", language="python",
                         kind="code", line_count=3, chunks=new_chunks)  # fmt: skip
    new_top = store.conn.execute("SELECT id, text, hash FROM chunks ORDER BY id DESC LIMIT 1").fetchone()
    assert new_top[0] == top_id and new_top[1] == "new text" and new_top[2] != old_hash  # the id reused

    assert vectors.put([(top_id, b, batch[top_id].hash, [1.0, 0.0, 0.0])]) == 0  # ... then the write
    stored = store.conn.execute("SELECT count(*) FROM chunk_vectors WHERE rowid = ?", (top_id,))
    assert stored.fetchone()[0] == 0
    assert (top_id, b, new_top[2]) in vectors.pending([b])  # the new text is still to embed
    store.close()
