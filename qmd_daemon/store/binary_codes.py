"""Binary codes of chunk vectors (one sign bit per dimension), scanned in memory before any
stored vector is read.

sqlite-vec 0.1.9's KNN is brute force: every vector's distance on every query, its int8 cosine
in scalar code (~7 us a 1024-dim vector here; k barely matters), so k=100 over 1M x 1024 int8
took 2.7 s, and the collection filter cut little of it (docs/scale.md). A vector's code is dim/8 bytes
(128 at 1024 dims) in the plain table `chunk_codes`; the codes of the searched collections live
in numpy, where the Hamming distance to the query's code takes ~15-20 ns a vector, and only the few
hundred nearest by Hamming are rescored with an int8 copy of their vectors kept in the same row
(dim bytes: sqlite-vec reads one vector out of a 1,024-vector chunk blob in ~0.3 ms, a plain row
in ~3 us, so rescoring through vec0 cost more than the whole scan). A collection's codes
load on its first search (or at daemon start, VectorIndex.warm) and again only when its version
(bumped by triggers on `chunk_codes`) moves, so searching one collection never reads or scans
another. A small searched set is scored whole instead (FULL_SCORE_VALUES), and one a little
larger rescores a pool scaled to it (scope_pool). Figures: docs/scale.md.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
else:  # numpy on first use, after llama.cpp (why: qmd_daemon/numeric.py)
    from qmd_daemon.numeric import np


# Codes per block of the Hamming scan: its (words x block) temporaries stay in cache.
_BLOCK = 16384

# A searched set of at most this many values (vectors x dims: 10k x 1024, 27k x 384) is scored
# whole from float32 copies in memory (2-15 ms for 10M values here; exact KNN 65-100 ms): there the
# true top 10 holds near-ties that codes cannot order (recall@10 0.87 at 10k x 1024, 400 candidates).
FULL_SCORE_VALUES = 10_500_000
# float32 values of copies held in all (x4 bytes: ~125 MB), so many small collections cannot
# grow the daemon without bound; past it the codes' path serves.
COPIES_BUDGET = 3 * FULL_SCORE_VALUES

CODE_TABLES = [
    """CREATE TABLE chunk_codes (
        chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
        collection_id INTEGER NOT NULL,
        code BLOB NOT NULL,
        vector BLOB NOT NULL
    )""",
    # Covering (the code in the index): loading a collection's codes reads ~140 bytes a vector, not
    # the ~1.2 KB rows with their int8 copies (300k x 1024: 3.2 s -> 0.8 s).
    "CREATE INDEX chunk_codes_by_collection ON chunk_codes(collection_id, chunk_id, code)",
    "CREATE TABLE chunk_code_versions (collection_id INTEGER PRIMARY KEY, version INTEGER NOT NULL)",
    """CREATE TRIGGER chunk_codes_insert AFTER INSERT ON chunk_codes BEGIN
        INSERT INTO chunk_code_versions (collection_id, version) VALUES (new.collection_id, 1)
        ON CONFLICT (collection_id) DO UPDATE SET version = version + 1;
    END""",
    """CREATE TRIGGER chunk_codes_delete AFTER DELETE ON chunk_codes BEGIN
        UPDATE chunk_code_versions SET version = version + 1 WHERE collection_id = old.collection_id;
    END""",
]


def binary_code(vector: Sequence[float] | np.ndarray) -> bytes:
    """Sign bits, little-endian within each byte (the order of sqlite-vec's vec_quantize_binary)."""
    return np.packbits(np.asarray(vector) > 0, bitorder="little").tobytes()


@cache
def _unit_levels() -> np.ndarray:
    """The float each int8 of sqlite-vec's 'unit' quantization stands for, indexed by the int8's
    byte XOR 0x80 (-128 -> 0 ... 127 -> 255). vec_quantize_int8(x, 'unit') is
    trunc(127.5 x - 0.5), toward zero, so q > 0 holds x in [q + 0.5, q + 1.5) / 127.5, q < 0 in
    (q - 0.5, q + 0.5] / 127.5 and 0 in (-0.5, 1.5) / 127.5: each level's centre, not q / 127.5,
    which puts every positive element a level low (tests/store/test_vectors.py checks the
    table against sqlite-vec)."""
    levels = np.arange(-128, 128, dtype=np.float32)
    return np.where(levels > 0, levels + 1, np.where(levels < 0, levels, 0.5)) / 127.5


def unit_int8_values(matrix: np.ndarray) -> np.ndarray:
    """float32 rows of vectors stored as sqlite-vec's 'unit' int8, each element read back at
    its level's centre, so a float query ranks them as it would the floats they came from."""
    return np.take(_unit_levels(), matrix.view(np.uint8) ^ 0x80)


def code_rows(matrix: np.ndarray) -> list[tuple[bytes, bytes]]:
    """(binary code, int8 copy) of each float row. The copy is scaled so the row's largest
    element is 127 (cosine needs no scale back) whatever the index stores: 'unit' int8 gives a
    unit vector's elements only ~+-20 levels at 384-1024 dims, which blurs near neighbours."""
    codes = np.packbits(matrix > 0, axis=1, bitorder="little")
    peaks = np.abs(matrix).max(axis=1, keepdims=True)
    copies = np.rint(matrix / np.where(peaks == 0, 1.0, peaks) * 127).astype(np.int8)
    return [(code.tobytes(), copy.tobytes()) for code, copy in zip(codes, copies, strict=True)]


def code_row(vector: Sequence[float] | np.ndarray) -> tuple[bytes, bytes]:
    """code_rows of one float vector."""
    return code_rows(np.asarray(vector, dtype=np.float32)[None, :])[0]


def stored_code_rows(blobs: list[bytes], quantization: str) -> list[tuple[bytes, bytes]]:
    """code_rows of vectors as chunk_vectors stores them, an int8 one read back first (so its
    copy holds no more than its 'unit' levels; code_row of the float vector at `put` does)."""
    matrix = np.frombuffer(b"".join(blobs), dtype=np.int8 if quantization == "int8" else np.float32)
    matrix = matrix.reshape(len(blobs), -1)
    return code_rows(unit_int8_values(matrix) if quantization == "int8" else matrix)


def derive_codes(conn: Any, quantization: str) -> int:
    """Fill chunk_codes from the stored vectors (an index embedded before codes existed): no
    re-embedding. Runs inside the caller's write transaction; returns the codes written."""
    conn.execute("DELETE FROM chunk_codes")
    written = 0
    cursor = conn.execute("SELECT rowid, collection_id, embedding FROM chunk_vectors")
    while batch := cursor.fetchmany(4096):
        rows = stored_code_rows([r[2] for r in batch], quantization)
        conn.executemany(
            "INSERT INTO chunk_codes (chunk_id, collection_id, code, vector) VALUES (?, ?, ?, ?)",
            [(r[0], r[1], *row) for r, row in zip(batch, rows, strict=True)],
        )
        written += len(batch)
    return written


def rescale_unit_copies(conn: Any) -> None:
    """Schema 2 kept an int8 index's stored 'unit' vectors as its copies: make them code_rows of
    those vectors read back, from chunk_codes itself (a plain table: reading the vectors out of
    vec0 again costs ~0.45 ms each, 8 minutes a million). Inside the caller's transaction."""
    after = 0
    while batch := conn.execute(
        "SELECT chunk_id, vector FROM chunk_codes WHERE chunk_id > ? ORDER BY chunk_id LIMIT 4096", (after,)
    ).fetchall():
        rows = stored_code_rows([r[1] for r in batch], "int8")
        conn.executemany(
            "UPDATE chunk_codes SET code = ?, vector = ? WHERE chunk_id = ?",
            [(*row, r[0]) for r, row in zip(batch, rows, strict=True)],
        )
        after = batch[-1][0]
    conn.execute("UPDATE chunk_code_versions SET version = version + 1")  # codes held elsewhere reload


def _words(codes: bytes, count: int) -> np.ndarray:
    """(words, count) uint64 matrix, one row per 64 bits of every code (column-major, so the
    scan runs each word's XOR and popcount over one contiguous array); codes are zero-padded to
    whole words (zeros add no distance)."""
    raw = np.frombuffer(codes, dtype=np.uint8).reshape(count, -1)
    pad = -raw.shape[1] % 8
    if pad:
        raw = np.hstack([raw, np.zeros((count, pad), dtype=np.uint8)])
    return np.ascontiguousarray(np.ascontiguousarray(raw).view(np.uint64).T)


def hamming(words: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Hamming distance of every code in `words` (as _words lays them out) to the query's
    words: XOR, popcount and a sum down the word rows, over blocks of codes so the temporaries
    stay in cache and a small collection costs three numpy calls (bench/knn.py --hamming)."""
    count = words.shape[1]
    out = np.empty(count, dtype=np.uint16)
    column = query[:, None]
    for start in range(0, count, _BLOCK):
        bits = np.bitwise_count(np.bitwise_xor(words[:, start : start + _BLOCK], column))
        bits.sum(axis=0, dtype=np.uint16, out=out[start : start + _BLOCK])
    return out


def closest(distances: np.ndarray, count: int) -> np.ndarray:
    """Positions of `count` smallest distances (all when fewer), unordered. Distances are small
    integers, so a histogram finds the cut in one pass (~2 ms at 1M, argpartition ~10 ms)."""
    if len(distances) <= count:
        return np.arange(len(distances))
    cut = int(np.searchsorted(np.cumsum(np.bincount(distances)), count))
    below = np.flatnonzero(distances < cut)
    return np.concatenate([below, np.flatnonzero(distances == cut)[: count - len(below)]])


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """float32 rows scaled to length 1 (zero rows stay zero), so a dot product is the cosine."""
    rows = matrix.astype(np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)


def _top(ids: np.ndarray, similarity: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(id, similarity) of the k most similar, best first; equal similarities by id."""
    if len(ids) > k:
        keep = np.argpartition(-similarity, k - 1)[:k]
        ids, similarity = ids[keep], similarity[keep]
    order = np.lexsort((ids, -similarity))
    return [(int(ids[i]), float(similarity[i])) for i in order]


@dataclass
class _CollectionCodes:
    collection_id: int
    version: int
    ids: np.ndarray
    words: np.ndarray
    unit_vectors: np.ndarray | None = None  # float32 copies, held only while scored whole


class CodeCache:
    """The codes of the collections searched so far, per connection's store; and, within
    COPIES_BUDGET, the unit float32 copies of those small enough to be scored whole."""

    def __init__(self) -> None:
        self._collections: dict[int, _CollectionCodes] = {}
        self._copy_values = 0
        self._lock = threading.Lock()

    def _current(self, conn: Any, collection_ids: list[int]) -> list[_CollectionCodes]:
        marks = ",".join("?" * len(collection_ids))
        versions = dict(
            conn.execute(
                f"SELECT collection_id, version FROM chunk_code_versions WHERE collection_id IN ({marks})",
                collection_ids,
            ).fetchall()
        )
        held: list[_CollectionCodes] = []
        with self._lock:
            for collection_id, version in versions.items():
                kept = self._collections.get(collection_id)
                if kept is None or kept.version != version:
                    if kept is not None and kept.unit_vectors is not None:
                        self._copy_values -= kept.unit_vectors.size
                    kept = self._load(conn, collection_id, version)
                    self._collections[collection_id] = kept
                held.append(kept)
        return held

    def load(self, conn: Any, collection_ids: list[int]) -> int:
        """Hold these collections' current codes; returns how many."""
        return sum(len(c.ids) for c in self._current(conn, collection_ids))

    @staticmethod
    def _load(conn: Any, collection_id: int, version: int) -> _CollectionCodes:
        rows = conn.execute(
            "SELECT chunk_id, code FROM chunk_codes WHERE collection_id = ? ORDER BY chunk_id",
            (collection_id,),
        ).fetchall()
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        words = _words(b"".join(r[1] for r in rows), len(rows)) if rows else np.empty((1, 0), np.uint64)
        return _CollectionCodes(collection_id, version, ids, words)

    def _copies(self, conn: Any, held: list[_CollectionCodes], dim: int) -> list[np.ndarray] | None:
        """The held collections' unit copies, loading the missing ones within COPIES_BUDGET
        (None past it: the search takes the codes' path)."""
        with self._lock:
            for codes in held:
                if codes.unit_vectors is not None:
                    continue
                if self._copy_values + len(codes.ids) * dim > COPIES_BUDGET:
                    return None
                rows = conn.execute(
                    "SELECT chunk_id, vector FROM chunk_codes WHERE collection_id = ? ORDER BY chunk_id",
                    (codes.collection_id,),
                ).fetchall()
                if [r[0] for r in rows] != codes.ids.tolist():  # written since the codes were read
                    return None
                matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(len(rows), -1)
                codes.unit_vectors = _unit_rows(matrix)
                self._copy_values += codes.unit_vectors.size
            return [c.unit_vectors for c in held if c.unit_vectors is not None]

    def search(
        self, conn: Any, query: np.ndarray, collection_ids: list[int], candidates: int, k: int
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) of the k nearest over the given collections: all of them
        scored when the searched set is small (FULL_SCORE_VALUES: there the true top 10 holds
        near-ties that codes cannot order), else the `candidates` nearest codes rescored."""
        held = [c for c in self._current(conn, collection_ids) if len(c.ids)]
        if not held:
            return []
        vectors = sum(len(c.ids) for c in held)
        small = vectors * query.size <= FULL_SCORE_VALUES
        copies = self._copies(conn, held, query.size) if small else None
        if copies is not None:
            unit_query = query / (float(np.linalg.norm(query)) or 1.0)
            similarity = np.concatenate([matrix @ unit_query for matrix in copies])
            return _top(np.concatenate([c.ids for c in held]), similarity, k)
        pool = max(candidates, scope_pool(vectors, query.size))
        return rescore(conn, query, _nearest(held, binary_code(query), pool), k)


def scope_pool(vectors: int, dim: int) -> int:
    """Candidates a searched set of `vectors` rescores at least: half of the size scored whole
    (FULL_SCORE_VALUES) just past it, then falling as 1 / vectors. A smaller set's true top 10 lies
    farther from the query, among near-ties that codes order badly, so it needs a larger share
    rescored. At 1M x 1024, a 17k-vector collection: recall@10 0.930 with 400 candidates, 0.970
    with 1,000, 0.980 with 2,000, 0.995 with 4,000, at 8 / 8 / 14 / 32 ms (rescoring reads each
    candidate's copy from SQLite); this pool gives it 3,090: 0.995 at 25 ms (docs/scale.md)."""
    whole = FULL_SCORE_VALUES // dim
    return whole * whole // (2 * max(vectors, 1))


def _nearest(held: list[_CollectionCodes], query_code: bytes, count: int) -> list[int]:
    """Chunk ids of the `count` codes nearest the query's, over the held collections."""
    query = _words(query_code, 1)[:, 0]
    best_ids: list[np.ndarray] = []
    best_distances: list[np.ndarray] = []
    for codes in held:
        distances = hamming(codes.words, query)
        keep = closest(distances, count)
        best_ids.append(codes.ids[keep])
        best_distances.append(distances[keep])
    ids, distances = np.concatenate(best_ids), np.concatenate(best_distances)
    return [int(i) for i in ids[closest(distances, count)]]


def rescore(conn: Any, query: np.ndarray, candidates: list[int], k: int) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the k candidates nearest the float query by their int8
    copies."""
    if not candidates:
        return []
    marks = ",".join("?" * len(candidates))
    rows = conn.execute(
        f"SELECT chunk_id, vector FROM chunk_codes WHERE chunk_id IN ({marks})", candidates
    ).fetchall()
    if not rows:  # none of them embedded yet (an `embed` still running)
        return []
    ids, matrix = int8_rows(rows)
    return rank(ids, matrix, query, k)


def int8_rows(rows: list[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """(ids, int8 matrix) of (id, int8 vector blob) rows."""
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(len(rows), -1)
    return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)), matrix


def rank(ids: np.ndarray, rows: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(id, cosine similarity) of the k rows nearest the float query, best first. The query
    stays float: quantized as an int8 index's vectors are, it misorders near neighbours."""
    unit_query = query / (float(np.linalg.norm(query)) or 1.0)
    return _top(ids, _unit_rows(rows) @ unit_query, k)
