from pathlib import Path

import numpy as np
import pytest

from qmd_daemon.store import binary_codes
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.vectors import VectorIndex
from qmd_daemon.text.chunk_model import Chunk


def _write(store: IndexStore, collection_id: int, path: str, chunks: list[Chunk]) -> None:
    """A python file of these chunks (inside the caller's transaction)."""
    store.write_file(
        collection_id,
        path,
        size=1,
        mtime_ns=1,
        content_hash=path,
        language="python",
        kind="code",
        line_count=len(chunks) + 1,
        chunks=chunks,
    )


@pytest.fixture(params=["scored whole", "codes then rescoring"])
def search_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each KNN test runs both ways a search goes: a set this small scored whole, and (that
    limit at 0) the codes' candidates rescored, as on a large index."""
    if request.param == "codes then rescoring":
        monkeypatch.setattr(binary_codes, "FULL_SCORE_VALUES", 0)
    return str(request.param)


def _store_with_chunks(tmp_path: Path) -> tuple[IndexStore, int, int]:
    store = IndexStore(tmp_path / "i.sqlite")
    with store.transaction():
        a = store.ensure_collection("a", tmp_path)
        b = store.ensure_collection("b", tmp_path)
        for cid, path in ((a, "x.py"), (b, "y.py")):
            _write(store, cid, path, [Chunk(1, 1, "same text"), Chunk(2, 2, f"unique {path}")])
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


def _clustered(count: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim))
    rows = centres[rng.integers(0, 40, count)] + 0.6 * rng.standard_normal((count, dim))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _store_with_vectors(
    tmp_path: Path, count: int, dim: int, quantization: str, rows: np.ndarray | None = None
) -> tuple[IndexStore, int, int]:
    """Real chunk rows in two collections (b holds every third file), each with a vector put
    through VectorIndex: ROWS in chunk id order, clustered ones by default."""
    store = IndexStore(tmp_path / "i.sqlite")
    rows = _clustered(count, dim, seed=1) if rows is None else rows
    with store.transaction():
        a = store.ensure_collection("a", tmp_path)
        b = store.ensure_collection("b", tmp_path)
        for n in range(count // 10):
            _write(
                store,
                a if n % 3 else b,
                f"f{n}.py",
                [Chunk(i + 1, i + 1, f"text {n} {i}") for i in range(10)],
            )
    vectors = VectorIndex(store, quantization=quantization)
    vectors.ensure("model-1", dim)
    vectors.put([(cid, col, h, rows[i].tolist()) for i, (cid, col, h) in enumerate(vectors.pending())])
    return store, a, b


def _float_top(stored: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    """Positions of the k stored float vectors nearest the float query: the reference."""
    return [int(i) for i in np.argsort(-(stored @ query), kind="stable")[:k]]


def _random_units(count: int, dim: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, dim))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_a_small_collection_in_a_big_index_finds_what_scoring_it_whole_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 12,000 random 256-dim vectors (no clusters: every query's top 10 sits among near-ties, as a
    # small collection's does in a big index), collection b holding 4,000. With the whole-scoring
    # limit at 3,600 vectors b takes the codes' path just past it, where a fixed pool of 400
    # candidates found 0.80 of the top 10 that scoring b whole finds (0.4 for one query); the
    # pool scaled to b's size (1,620) finds at least 0.95.
    stored = _random_units(12000, 256, seed=1)
    store, _a, b = _store_with_vectors(tmp_path, 12000, 256, "float", rows=stored)
    vectors = VectorIndex(store)
    found = []
    for query in stored[:20] + 0.5 * _random_units(20, 256, seed=2):  # near a stored vector
        monkeypatch.setattr(binary_codes, "FULL_SCORE_VALUES", 12000 * 256)
        whole = {c for c, _s in vectors.search(query.tolist(), [b], 10)}
        monkeypatch.setattr(binary_codes, "FULL_SCORE_VALUES", 3600 * 256)
        found.append(len(whole & {c for c, _s in vectors.search(query.tolist(), [b], 10)}) / 10)
    assert sum(found) / len(found) >= 0.95
    store.close()


@pytest.mark.parametrize("quantization", ["float", "int8"])
def test_code_search_finds_the_float_top_10_and_stays_in_the_collection(
    tmp_path: Path, quantization: str, search_path: str
) -> None:
    # 2,000 vectors of MiniLM's 384 dims, each query near a stored vector, as a question near its
    # answer. A set this small is scored whole; with that limit at 0 the 400 candidates of the
    # codes are rescored, as on a large index, so the codes really choose. The reference is the
    # float query against the float vectors the stored ones came from (chunk ids follow them).
    store, a, b = _store_with_vectors(tmp_path, 2000, 384, quantization)
    vectors = VectorIndex(store, quantization=quantization)
    in_b = {
        r[0] for r in store.conn.execute("SELECT chunk_id FROM chunk_codes WHERE collection_id = ?", (b,))
    }
    chunk_ids = [r[0] for r in store.conn.execute("SELECT id FROM chunks ORDER BY id")]
    stored = _clustered(2000, 384, seed=1)
    recalls = []
    for query in stored[:20] + 0.5 * _clustered(20, 384, seed=2):
        exact = {chunk_ids[i] for i in _float_top(stored, query, 10)}
        found = [c for c, _s in vectors.search(query.tolist(), [a, b], 10)]
        recalls.append(len(exact & set(found)) / 10)
        only_b = [c for c, _s in vectors.search(query.tolist(), [b], 10)]
        assert only_b and set(only_b) <= in_b
    # The int8 copies blur near-ties, so not 1.0. An int8 index rescored its 'unit' int8 vectors
    # (about +-20 levels at these element sizes) with the query quantized too: 0.92 here.
    assert sum(recalls) / len(recalls) >= 0.95
    store.close()


def _two_near_vectors(tmp_path: Path, quantization: str) -> tuple[IndexStore, int, int, int]:
    """Collection a holds near (chunk 1) and far (chunk 2): the query's second element is under
    one int8 'unit' level, so quantizing the query drops it, and near's first element sits just
    under a level boundary that far's crosses: by the quantized query far wins, by the float
    query near does (0.795 against 0.789)."""
    store, a, _b = _store_with_chunks(tmp_path)
    vectors = VectorIndex(store, quantization=quantization)
    vectors.ensure("model-1", 4)
    (near, _a, near_hash), (far, _a2, far_hash) = vectors.pending([a])
    vectors.put(
        [
            (near, a, near_hash, [0.788, (1 - 0.788**2) ** 0.5, 0.0, 0.0]),
            (far, a, far_hash, [0.7885, 0.0, (1 - 0.7885**2) ** 0.5, 0.0]),
        ]
    )
    return store, a, near, far


def test_an_int8_index_ranks_by_the_float_query_not_the_quantized_one(
    tmp_path: Path, search_path: str
) -> None:
    store, a, near, far = _two_near_vectors(tmp_path, "int8")
    vectors = VectorIndex(store, quantization="int8")
    query = [1.0, 0.0115, 0.0, 0.0]
    assert [c for c, _s in vectors.search(query, [a], 2)] == [near, far]
    assert [c for c, _s in vectors.exact_search(query, [a], 2)] == [near, far]
    store.close()


def _copy_peaks(store: IndexStore) -> list[int]:
    copies = store.conn.execute("SELECT vector FROM chunk_codes ORDER BY chunk_id").fetchall()
    return [int(np.abs(np.frombuffer(c[0], dtype=np.int8).astype(int)).max()) for c in copies]


def test_an_int8_index_of_schema_2_gets_copies_at_the_whole_int8_range(tmp_path: Path) -> None:
    """Schema 2 kept an int8 index's stored 'unit' vectors as its copies; opening it derives
    them again at the whole int8 range (peak 127), and search still ranks by the float query."""
    store, a, near, far = _two_near_vectors(tmp_path, "int8")
    with store.transaction():  # back to what schema 2 wrote
        store.conn.execute(
            "UPDATE chunk_codes SET vector = (SELECT embedding FROM chunk_vectors WHERE rowid = chunk_id)"
        )
        store.conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    assert max(_copy_peaks(store)) < 127
    store.close()
    reopened = IndexStore(tmp_path / "i.sqlite")
    assert _copy_peaks(reopened) == [127, 127]
    found = VectorIndex(reopened, quantization="int8").search([1.0, 0.0115, 0.0, 0.0], [a], 2)
    assert [c for c, _s in found] == [near, far]
    reopened.close()


def test_int8_copies_read_back_at_the_centre_of_sqlite_vec_levels(tmp_path: Path) -> None:
    """unit_int8_values' table against sqlite-vec's own vec_quantize_int8(x, 'unit') on the element
    sizes of unit vectors: each value within its level (a zero level is two wide), none biased."""
    store = IndexStore(tmp_path / "i.sqlite")
    floats = np.random.default_rng(5).uniform(-0.2, 0.2, 4096).astype(np.float32)
    sql = "SELECT vec_quantize_int8(?, 'unit')"
    stored = np.frombuffer(store.conn.execute(sql, (floats.tobytes(),)).fetchone()[0], dtype=np.int8)
    error = binary_codes.unit_int8_values(stored) - floats
    half_level = np.where(stored == 0, 1.0, 0.5) / 127.5
    assert np.all(np.abs(error) <= half_level + 1e-6)
    assert abs(float(error.mean())) < 0.05 / 127.5
    store.close()


@pytest.mark.parametrize("quantization", ["float", "int8"])
def test_exact_search_is_the_exact_top_k_of_what_is_stored(tmp_path: Path, quantization: str) -> None:
    """sqlite-vec's KNN (float), or its candidates reordered by the float query (int8), against
    numpy over every stored vector read back."""
    store, a, b = _store_with_vectors(tmp_path, 500, 64, quantization)
    vectors = VectorIndex(store, quantization=quantization)
    rows = store.conn.execute("SELECT rowid, embedding FROM chunk_vectors ORDER BY rowid").fetchall()
    ids = np.array([r[0] for r in rows])
    raw = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8 if quantization == "int8" else np.float32)
    matrix = raw.reshape(len(rows), 64)
    if quantization == "int8":
        matrix = binary_codes.unit_int8_values(matrix)
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    for query in _clustered(5, 64, seed=6):
        expected = [int(ids[i]) for i in _float_top(unit, query, 10)]
        assert [c for c, _s in vectors.exact_search(query.tolist(), [a, b], 10)] == expected
    store.close()


def test_an_index_embedded_before_codes_gets_them_from_its_vectors(tmp_path: Path) -> None:
    """Schema v1 with vectors (what older qmd-daemon wrote): opening it derives the codes."""
    store, a, b = _store_with_vectors(tmp_path, 500, 16, "int8")
    vectors = VectorIndex(store, quantization="int8")
    query = _clustered(1, 16, seed=3)[0].tolist()
    expected = vectors.exact_search(query, [a, b], 10)
    with store.transaction():  # back to v1: no code tables, no schema_version 2
        for name in ("chunk_codes_insert", "chunk_codes_delete"):
            store.conn.execute(f"DROP TRIGGER {name}")
        store.conn.execute("DROP TABLE chunk_codes")
        store.conn.execute("DROP TABLE chunk_code_versions")
        store.conn.execute("DELETE FROM meta WHERE key = 'vector_codes'")
        store.conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    store.close()
    reopened = IndexStore(tmp_path / "i.sqlite")
    assert reopened.conn.execute("SELECT count(*) FROM chunk_codes").fetchone()[0] == 500
    found = VectorIndex(reopened, quantization="int8").search(query, [a, b], 10)
    assert [c for c, _s in found] == [c for c, _s in expected]
    reopened.close()


def test_codes_loaded_at_start_cover_every_collection_and_follow_new_vectors(
    tmp_path: Path, search_path: str
) -> None:
    """warm() (the daemon at start) holds every code, and a vector put after that is still found."""
    store, a, b = _store_with_vectors(tmp_path, 500, 16, "int8")
    vectors = VectorIndex(store, quantization="int8")
    assert vectors.warm() == 500
    vectors.search(_clustered(1, 16, seed=5)[0].tolist(), [a, b], 5)  # copies held too
    with store.transaction():
        _write(store, b, "new.py", [Chunk(1, 1, "new text")])
    [(new_id, _col, new_hash)] = vectors.pending()
    query = _clustered(1, 16, seed=4)[0]
    vectors.put([(new_id, b, new_hash, query.tolist())])
    assert vectors.search(query.tolist(), [a, b], 5)[0][0] == new_id


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


@pytest.mark.parametrize("quantization", ["float", "int8"])
def test_search_among_ranks_only_the_given_chunks_nearest_first(tmp_path: Path, quantization: str) -> None:
    """A --path filter's vectors: each of the given chunks compared, by its int8 copy as search
    rescores; while codes are missing, by the stored vectors read back, exactly."""
    store, a, b = _store_with_vectors(tmp_path, 500, 64, quantization)
    vectors = VectorIndex(store, quantization=quantization)
    rows = store.conn.execute("SELECT rowid, embedding FROM chunk_vectors ORDER BY rowid").fetchall()
    among = [r[0] for r in rows][::7]
    raw = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8 if quantization == "int8" else np.float32)
    matrix = raw.reshape(len(rows), 64)[::7]
    if quantization == "int8":
        matrix = binary_codes.unit_int8_values(matrix)
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    queries = _clustered(5, 64, seed=8)
    for query in queries:
        found = vectors.search_among(query.tolist(), among, 10)
        expected = [among[i] for i in _float_top(unit, query, 10)]
        assert len(found) == 10 and {c for c, _ in found} <= set(among)
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        assert len({c for c, _ in found} & set(expected)) >= 9  # int8 copies: near-ties may swap
    with store.transaction():  # codes not derived yet (an index older code embedded)
        store.conn.execute("DELETE FROM meta WHERE key = 'vector_codes'")
    for query in queries:
        expected = [among[i] for i in _float_top(unit, query, 10)]
        assert [c for c, _ in vectors.search_among(query.tolist(), among, 10)] == expected
    assert vectors.search_among(queries[0].tolist(), [], 10) == []


@pytest.mark.parametrize("quantization", ["float", "int8"])
def test_chunks_without_vectors_yet_are_no_vector_hits(tmp_path: Path, quantization: str) -> None:
    """While `embed` is still running, a --path filter may allow only chunks that have no vector
    yet, and a collection may hold none: no vector hits, not numpy's reshape error (a search
    `--path 'docs/**'` over a half-embedded index ended in a traceback)."""
    store, a, _ = _store_with_vectors(tmp_path, 100, 16, quantization)
    with store.transaction():
        fresh = store.ensure_collection("fresh", tmp_path)
        _write(store, fresh, "new.py", [Chunk(1, 1, "not embedded"), Chunk(2, 2, "nor this")])
    unembedded = [r[0] for r in store.conn.execute(
        "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.collection_id = ?", (fresh,))]
    vectors = VectorIndex(store, quantization=quantization)
    query = np.ones(16).tolist()
    assert vectors.search_among(query, unembedded, 10) == []
    assert vectors.exact_search(query, [fresh], 10) == []
    assert len(vectors.search(query, [a, fresh], 10)) == 10
    store.close()


@pytest.mark.parametrize("quantization", ["float", "int8"])
def test_vectors_of_reads_back_each_stored_direction(tmp_path: Path, quantization: str) -> None:
    """Rocchio feedback (search/feedback.py) moves a question toward stored vectors: each must
    read back in its own direction, an int8 one at its levels, and a chunk without one is absent."""
    store, a, b = _store_with_chunks(tmp_path)
    vectors = VectorIndex(store, quantization=quantization)
    vectors.ensure("model-1", 4)
    (one, _, one_hash), (two, _, two_hash) = vectors.pending([a])
    put = {one: [0.9, 0.1, 0.0, 0.0], two: [0.0, -0.3, 0.2, 0.9]}
    vectors.put([(one, a, one_hash, put[one]), (two, a, two_hash, put[two])])
    unembedded = vectors.pending([b])[0][0]
    read = vectors.vectors_of([one, two, unembedded])
    assert set(read) == {one, two}
    for chunk_id, vector in read.items():
        cosine = np.dot(vector, put[chunk_id]) / (np.linalg.norm(vector) * np.linalg.norm(put[chunk_id]))
        assert cosine > 0.99
    assert vectors.vectors_of([]) == {}
    store.close()
