"""Chunk vectors in sqlite-vec.

One vec0 table for the active embedding model (`chunk_vectors`, rowid = chunk id, cosine
distance, the collection as a metadata column), and beside it each vector's binary code
(`chunk_codes`, store/binary_codes.py): a search scans the searched collections' codes in memory,
then rescores the best few hundred with their int8 copies (a searched set under ~10k vectors is
scored whole, one a little larger rescores a pool scaled to its size: binary_codes.scope_pool),
so its cost no longer grows with k x every vector (sqlite-vec's brute-force KNN).
The model's fingerprint and dimension live in `meta`; a different model drops the table and everything is
embedded again cleanly. Identical chunks (same content hash) are embedded once: a new chunk whose
hash already has a vector copies it, from a live chunk or from the vectors kept after their chunks
went (store/kept_vectors.py: a branch switched back to is not embedded again).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from qmd_daemon.config import QUANTIZATIONS
from qmd_daemon.store import kept_vectors
from qmd_daemon.store.binary_codes import (
    CodeCache,
    code_row,
    derive_codes,
    int8_rows,
    rank,
    rescore,
    stored_code_rows,
    unit_int8_values,
)
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.pending_order import ORDER_BY, EmbedPriority

if TYPE_CHECKING:
    import numpy as np
else:  # numpy on first use, after llama.cpp (why: qmd_daemon/numeric.py)
    from qmd_daemon.numeric import np


# Candidates by Hamming distance rescored with the stored vectors: at least this many, and at
# least RESCORE_FACTOR x k (recall@10 against exact search, bench/knn.py).
RESCORE_MIN = 400
RESCORE_FACTOR = 4


def _pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


class VectorIndex:
    """Vectors of one embedding model inside the index database."""

    def __init__(self, store: IndexStore, quantization: str = "float"):
        if quantization not in QUANTIZATIONS:
            raise ValueError(f"quantization must be one of {QUANTIZATIONS}")
        self.store = store
        self.conn: Any = store.conn
        self.quantization = quantization

    def active_model(self) -> tuple[str, int, str] | None:
        fingerprint, dim = self.store.meta_value("vector_model"), self.store.meta_value("vector_dim")
        if not fingerprint or not dim:
            return None
        return fingerprint, int(dim), self.store.meta_value("vector_quantization") or "float"

    def ensure(self, fingerprint: str, dim: int) -> bool:
        """Make the table fit this model; returns True when earlier vectors were dropped."""
        current = self.active_model()
        if current == (fingerprint, dim, self.quantization):
            if not self._codes_ready():
                with self.store.transaction():  # an index that older code embedded: codes from its vectors
                    derive_codes(self.conn, self.quantization)
                    self.store.set_meta("vector_codes", fingerprint)
            return False
        with self.store.transaction():
            self.conn.execute("DELETE FROM chunk_codes")
            self.conn.execute("DROP TRIGGER IF EXISTS chunk_vectors_delete")
            self.conn.execute("DROP TABLE IF EXISTS chunk_vectors")
            column = f"embedding {'int8' if self.quantization == 'int8' else 'float'}[{dim}]"
            self.conn.execute(
                f"CREATE VIRTUAL TABLE chunk_vectors USING vec0("
                f"collection_id integer, {column} distance_metric=cosine)"
            )
            self.conn.execute(kept_vectors.DELETE_TRIGGER)
            self.conn.execute("DELETE FROM kept_vectors")  # another model's: never copied
            for key, value in (
                ("vector_model", fingerprint),
                ("vector_dim", str(dim)),
                ("vector_quantization", self.quantization),
                ("vector_codes", fingerprint),
            ):
                self.store.set_meta(key, value)
        return current is not None

    def _codes_ready(self) -> bool:
        """Whether chunk_codes covers the active model's vectors (set by ensure or the migration)."""
        active = self.active_model()
        return active is not None and self.store.meta_value("vector_codes") == active[0]

    def _encode(self, quantization: str | None = None) -> str:
        return "vec_quantize_int8(?, 'unit')" if (quantization or self.quantization) == "int8" else "?"

    def pending(
        self,
        collection_ids: list[int] | None = None,
        limit: int | None = None,
        priority: EmbedPriority | None = None,
    ) -> list[tuple[int, int, str]]:
        """(chunk id, collection id, content hash) of chunks that have no vector yet, in embedding
        order (store/pending_order.py). One query: the returned files arrive as a JSON array, joined
        on (collection, path) through the files table's unique index."""
        if self.active_model() is None:
            return []
        priority = priority or EmbedPriority()
        where = ""
        params: list[Any] = [json.dumps(priority.returned_rows())]
        if collection_ids:
            where = f"AND f.collection_id IN ({','.join('?' * len(collection_ids))})"
            params.extend(collection_ids)
        params.extend((priority.first_collection, priority.recent_since_ns))
        sql = f"""WITH h(file_id, hits) AS MATERIALIZED (
                      SELECT r.id, j.value ->> 2 FROM json_each(?) j
                      JOIN files r ON r.collection_id = j.value ->> 0 AND r.path = j.value ->> 1)
                  SELECT c.id, f.collection_id, c.hash FROM chunks c JOIN files f ON f.id = c.file_id
                  LEFT JOIN h ON h.file_id = f.id
                  WHERE c.id NOT IN (SELECT rowid FROM chunk_vectors) {where}
                  {ORDER_BY.format(first="?", since="?")}"""
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [(int(r[0]), int(r[1]), r[2]) for r in self.conn.execute(sql, params)]

    def pending_count(self, collection_ids: list[int] | None = None) -> int:
        """Chunks without a vector. Every search asks (for `stale`) and the count scans every
        chunk (~1 us each: 85 ms at 75k chunks), so it is kept until the data changes."""
        key = (self.store.data_state(), tuple(collection_ids or ()))
        kept = self.store.derived.get("pending_vectors")
        if kept is not None and kept[0] == key:
            return int(kept[1])
        count = self._count_pending(collection_ids)
        self.store.derived["pending_vectors"] = (key, count)
        return count

    def _count_pending(self, collection_ids: list[int] | None) -> int:
        if self.active_model() is None:
            return 0
        where, params = "", []
        if collection_ids:
            where = f"AND f.collection_id IN ({','.join('?' * len(collection_ids))})"
            params = list(collection_ids)
        return int(
            self.conn.execute(
                f"""SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id
                WHERE c.id NOT IN (SELECT rowid FROM chunk_vectors) {where}""",
                params,
            ).fetchone()[0]
        )

    def copy_identical(self, pending: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Give chunks whose content already has a vector that vector (a live twin's, else one kept
        after its chunk went: store/kept_vectors.py); returns those still without."""
        left: list[tuple[int, int, str]] = []
        active = self.active_model()
        if active is None:
            return list(pending)
        typed = "vec_int8(?)" if active[2] == "int8" else "?"  # int8 blobs must say so
        with self.store.transaction():
            for chunk_id, collection_id, content_hash in pending:
                donor = self.conn.execute(  # its code row too: made from the float vector
                    """SELECT v.embedding, k.code, k.vector FROM chunks c
                       JOIN chunk_vectors v ON v.rowid = c.id LEFT JOIN chunk_codes k ON k.chunk_id = c.id
                       WHERE c.hash = ? AND c.id != ? LIMIT 1""",
                    (content_hash, chunk_id),
                ).fetchone()
                if donor is None:
                    same = "SELECT 1 FROM chunks WHERE id = ? AND hash = ?"  # not deleted or replaced
                    kept = (
                        kept_vectors.take(self.conn, content_hash)
                        if self.conn.execute(same, (chunk_id, content_hash)).fetchone()
                        else None
                    )
                    donor = None if kept is None else (kept, None, None)
                if donor is None:
                    left.append((chunk_id, collection_id, content_hash))
                    continue
                self.conn.execute(
                    f"INSERT INTO chunk_vectors (rowid, collection_id, embedding) VALUES (?, ?, {typed})",
                    (chunk_id, collection_id, donor[0]),
                )
                stored_as = active[2]
                row = (
                    (donor[1], donor[2])
                    if donor[1] is not None
                    else stored_code_rows([donor[0]], stored_as)[0]
                )
                self._put_code(chunk_id, collection_id, row)
        return left

    def trim_kept(self) -> int:
        """Drop the oldest kept vectors past the cap (store/kept_vectors.py); returns how many."""
        with self.store.transaction():
            return kept_vectors.trim(self.conn)

    def kept_count(self) -> int:
        """Vectors kept after their chunks went, waiting for an identical chunk."""
        return int(self.conn.execute("SELECT count(*) FROM kept_vectors").fetchone()[0])

    def _put_code(self, chunk_id: int, collection_id: int, row: tuple[bytes, bytes]) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO chunk_codes (chunk_id, collection_id, code, vector) VALUES (?, ?, ?, ?)",
            (chunk_id, collection_id, *row),
        )

    def put(self, rows: Sequence[tuple[int, int, str, Sequence[float]]]) -> int:
        """Store (chunk id, collection id, content hash, vector) in one transaction; skips a chunk
        deleted meanwhile, or replaced: a chunk id is reused (no AUTOINCREMENT), so only the id and
        the hash of the text embedded together say the vector is still that chunk's."""
        written = 0
        with self.store.transaction():
            for chunk_id, collection_id, content_hash, vector in rows:
                same = "SELECT 1 FROM chunks WHERE id = ? AND hash = ?"
                if not self.conn.execute(same, (chunk_id, content_hash)).fetchone():
                    continue
                self.conn.execute("DELETE FROM chunk_vectors WHERE rowid = ?", (chunk_id,))
                self.conn.execute(
                    "INSERT INTO chunk_vectors (rowid, collection_id, embedding) "
                    f"VALUES (?, ?, {self._encode()})",
                    (chunk_id, collection_id, _pack(vector)),
                )
                self._put_code(chunk_id, collection_id, code_row(np.asarray(vector, dtype=np.float32)))
                written += 1
        return written

    def search(self, vector: Sequence[float], collection_ids: list[int], k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first, within the given collections: the nearest
        codes first, then those candidates' int8 copies scored with the float query
        (exact_search while codes are missing)."""
        active = self.active_model()
        if active is None or not collection_ids:
            return []
        if not self._codes_ready():
            return self.exact_search(vector, collection_ids, k)
        query = np.asarray(vector, dtype=np.float32)
        cache = self._code_cache(active)
        return cache.search(self.conn, query, collection_ids, _candidates(k), k)

    def search_among(self, vector: Sequence[float], chunk_ids: list[int], k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) of the k of `chunk_ids` nearest, each scored by its int8
        copy as search rescores (the stored vectors while codes are missing)."""
        active = self.active_model()
        if active is None or not chunk_ids:
            return []
        query = np.asarray(vector, dtype=np.float32)
        if self._codes_ready():
            return rescore(self.conn, query, chunk_ids, k)
        ids, matrix = self._stored(chunk_ids, active[2])
        return rank(ids, matrix, query, k) if len(ids) else []

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, list[float]]:
        """chunk id -> its stored vector (an int8 one read back at its levels), for those with one."""
        active = self.active_model()
        if active is None or not chunk_ids:
            return {}
        ids, matrix = self._stored(chunk_ids, active[2])
        return dict(zip(ids.tolist(), matrix.tolist(), strict=True)) if len(ids) else {}

    def _stored(self, chunk_ids: Sequence[int], quantization: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids, one row each) of the chunks' stored vectors, an int8 one at its levels."""
        stored = self.conn.execute(
            "SELECT rowid, embedding FROM chunk_vectors WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps(list(chunk_ids)),),
        ).fetchall()
        if not stored:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        if quantization == "int8":
            ids, matrix = int8_rows(stored)
            return ids, unit_int8_values(matrix)
        ids = np.fromiter((r[0] for r in stored), dtype=np.int64, count=len(stored))
        return ids, np.frombuffer(b"".join(r[1] for r in stored), dtype=np.float32).reshape(len(stored), -1)

    def _code_cache(self, active: tuple[str, int, str]) -> CodeCache:
        """The store's cache of codes, new when the vectors' model changed."""
        held = self.store.derived.get("vector_codes")
        if held is None or held[0] != active:
            held = (active, CodeCache())
            self.store.derived["vector_codes"] = held
        return held[1]

    def warm(self) -> int:
        """Load every collection's codes now (a daemon at start, beside its first answers), so
        no search pays for it: ~1 s a million codes. Returns the codes held."""
        active = self.active_model()
        if active is None or not self._codes_ready():
            return 0
        collection_ids = [r[0] for r in self.conn.execute("SELECT collection_id FROM chunk_code_versions")]
        return self._code_cache(active).load(self.conn, collection_ids) if collection_ids else 0

    def exact_search(
        self, vector: Sequence[float], collection_ids: list[int], k: int
    ) -> list[tuple[int, float]]:
        """sqlite-vec's brute-force KNN over every vector of the collections (cost ~ vectors).
        Its int8 KNN must quantize the query as the vectors are, which misorders near
        neighbours, so an int8 index asks it for the same candidates as search rescores and
        orders them by the float query (a full read of the vectors took 4x the KNN's time)."""
        active = self.active_model()
        if active is None or not collection_ids:
            return []
        marks = ",".join("?" * len(collection_ids))
        # Encode the query as the stored vectors are, even if the config asks for another
        # quantization that the next `embed` has not applied yet.
        int8 = active[2] == "int8"
        rows = self.conn.execute(
            f"""SELECT rowid, distance FROM chunk_vectors
                WHERE embedding MATCH {self._encode(active[2])} AND k = ? AND collection_id IN ({marks})
                ORDER BY distance""",
            (_pack(vector), _candidates(k) if int8 else k, *collection_ids),
        ).fetchall()
        if not int8:
            return [(int(r[0]), 1.0 - float(r[1])) for r in rows]
        if not rows:  # the collections hold no vector yet
            return []
        found = ",".join("?" * len(rows))
        stored = self.conn.execute(
            f"SELECT rowid, embedding FROM chunk_vectors WHERE rowid IN ({found})", [r[0] for r in rows]
        ).fetchall()
        ids, matrix = int8_rows(stored)
        return rank(ids, unit_int8_values(matrix), np.asarray(vector, dtype=np.float32), k)


def _candidates(k: int) -> int:
    """How many vectors a search of k rescores with the float query."""
    return max(RESCORE_MIN, RESCORE_FACTOR * k)
