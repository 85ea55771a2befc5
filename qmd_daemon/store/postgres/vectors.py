"""Chunk vectors in pgvector: one table for the active embedding model, an HNSW index (cosine).

The same contract as store/vectors.py's VectorIndex (the model's fingerprint and dimension in
`meta`, a model change drops and re-creates the table, identical chunks share one embedding, a
deleted chunk's vector kept for its content's return: store/kept_vectors.py, schema.py's V4), with
the search's collection filter inside the ANN scan: pgvector 0.8's iterative index scan keeps
walking the graph until k rows of the searched collections are found, instead of filtering the
top ef_search rows of every collection afterwards (which returns too few for a small collection).
A small filtered scope skips the graph: its vectors are compared whole (EXACT_ROWS, FILTERED_SHARE).
`int8` stores pgvector's halfvec (2 bytes a dimension; it has no int8 type), `float` its vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qmd_daemon.config import QUANTIZATIONS
from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.store import kept_vectors
from qmd_daemon.store.pending_order import ORDER_BY, EmbedPriority
from qmd_daemon.store.postgres.connection import PostgresDatabase
from qmd_daemon.store.postgres.schema import KEEP_TRIGGER, enable_pgvector, meta_value, set_meta

_COLUMN_TYPE = {"float": "vector", "int8": "halfvec"}
VECTOR_LOCK = 0x716D6401  # advisory lock key of the vector table's (re)creation
# Graph candidates per search: at least this many, and at least 2 x k. bench/knn_backends.py at
# 300k x 1024, k=100, 20 queries: recall@10 0.945 with ef_search 200, 0.995 with 400, at about
# the same latency (62 / 67 ms).
EF_SEARCH_MIN = 400
# The graph's build parameters (pgvector's defaults are m=16, ef_construction=64). 1M x 1024, k=100,
# ef_search 1000, warm and idle (bench/knn_pg_settings.py): recall@10 1.000 over the whole table in
# 18 ms and 0.990 in a collection of half in 16 ms, where the default graph gave 0.94 / 0.91. The
# price is the build: CREATE INDEX at 1M took 1,143 s (load 3-4) against 348 s (idle), and every
# insert walks a denser graph. An index built with other parameters keeps them (docs/postgres.md).
HNSW_BUILD = "WITH (m = 24, ef_construction = 128)"
EF_SEARCH_MAX = 1000  # pgvector's limit; the iterative scan goes on past it for a filter
# Past 400k vectors, one more candidate a thousand vectors (1,000 from 1M on): at 1M x 1024 with
# the default graph (m=16, ef_construction=64) recall@10 0.895 -> 0.94 over the whole table and
# 0.86 -> 0.91 in a collection of half, ef_search 400 -> 1000 (bench/knn_pg_settings.py).
ROWS_PER_CANDIDATE = 1000
# A filtered scope is compared whole (the collection index, then an exact sort) instead of walked
# through the graph when it holds at most EXACT_ROWS vectors, or at most FILTERED_SHARE of the
# table (up to EXACT_ROWS_MAX), and in either case at most EXACT_SHARE of it (a whole small table
# is faster through the graph: 10k x 1024, 11 ms against 28 ms exactly). The filtered walk goes
# on until k rows of the scope turn up, at most hnsw.max_scan_tuples (20,000) rows, which at
# ef_search 1000 holds the candidates only for a share of 5% or more. 1M x 1024, k=100: 1.7%
# (17k vectors) 763 ms / recall@10 0.79 through the graph, 93 ms / 1.000 exactly (idle,
# bench/knn_backends.py); 3.4% 763 ms / 0.925 against 438 ms / 1.000, 6.9% 84 ms / 0.950 against
# 415 ms (load average 9, bench/knn_pg_settings.py; docs/postgres.md).
EXACT_ROWS = 20_000
FILTERED_SHARE = 0.05
EXACT_ROWS_MAX = 100_000  # ~0.5 s exactly (5.4 us a 1024-dim vector)
EXACT_SHARE = 0.25


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form, '[x,y,...]': sent as text, cast by the server to the column type."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PostgresVectorIndex:
    """Vectors of one embedding model in the PostgreSQL index."""

    def __init__(self, db: PostgresDatabase, quantization: str = "float"):
        if quantization not in QUANTIZATIONS:
            raise ValueError(f"quantization must be one of {QUANTIZATIONS}")
        self.db = db
        self.quantization = quantization

    def active_model(self) -> tuple[str, int, str] | None:
        fingerprint, dim = meta_value(self.db, "vector_model"), meta_value(self.db, "vector_dim")
        if not fingerprint or not dim:
            return None
        return fingerprint, int(dim), meta_value(self.db, "vector_quantization") or "float"

    def ensure(self, fingerprint: str, dim: int) -> bool:
        """Make the table fit this model; returns True when earlier vectors were dropped."""
        wanted = (fingerprint, dim, self.quantization)
        current = self.active_model()
        if current == wanted:
            return False
        missing = enable_pgvector(self.db)
        if missing is not None:
            raise IndexDatabaseError(missing)
        with self.db.transaction():
            self.db.advisory_lock(VECTOR_LOCK)
            current = self.active_model()  # another machine may have made it meanwhile
            if current == wanted:
                return False
            column = f"{_COLUMN_TYPE[self.quantization]}({int(dim)})"
            self.db.execute("DROP TABLE IF EXISTS chunk_vectors")
            self.db.execute(
                f"""CREATE TABLE chunk_vectors (
                    chunk_id BIGINT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
                    collection_id INTEGER NOT NULL,
                    embedding {column} NOT NULL
                )"""
            )
            self.db.execute("CREATE INDEX chunk_vectors_by_collection ON chunk_vectors (collection_id)")
            self.db.execute(
                "CREATE INDEX chunk_vectors_ann ON chunk_vectors "
                f"USING hnsw (embedding {_COLUMN_TYPE[self.quantization]}_cosine_ops) {HNSW_BUILD}"
            )
            self.db.execute(KEEP_TRIGGER)
            self.db.execute("DELETE FROM kept_vectors")  # another model's: never copied
            for key, value in (
                ("vector_model", fingerprint),
                ("vector_dim", str(dim)),
                ("vector_quantization", self.quantization),
            ):
                set_meta(self.db, key, value)
        return current is not None

    def _cast(self) -> str:
        """The stored column's type, for casting a query or a new vector to it."""
        active = self.active_model()
        return _COLUMN_TYPE[active[2] if active else self.quantization]

    def pending(
        self,
        collection_ids: list[int] | None = None,
        limit: int | None = None,
        priority: EmbedPriority | None = None,
    ) -> list[tuple[int, int, str]]:
        """(chunk id, collection id, content hash) of chunks that have no vector yet, in embedding
        order (store/pending_order.py)."""
        if self.active_model() is None:
            return []
        priority = priority or EmbedPriority()
        returned = priority.returned_rows()
        params: list[Any] = [[r[0] for r in returned], [r[1] for r in returned], [r[2] for r in returned]]
        if collection_ids:
            params.append(list(collection_ids))
        params.extend((priority.first_collection, priority.recent_since_ns))
        sql = f"""WITH h AS (SELECT r.id AS file_id, p.hits
                      FROM unnest(%s::bigint[], %s::text[], %s::bigint[]) AS p(collection_id, path, hits)
                      JOIN files r ON r.collection_id = p.collection_id AND r.path = p.path)
                  SELECT c.id, f.collection_id, c.hash FROM chunks c JOIN files f ON f.id = c.file_id
                  LEFT JOIN h ON h.file_id = f.id
                  WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id)
                  {"AND f.collection_id = ANY(%s)" if collection_ids else ""}
                  {ORDER_BY.format(first="%s::bigint", since="%s::bigint")}"""
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [(int(r[0]), int(r[1]), r[2]) for r in self.db.execute(sql, params)]

    def pending_count(self, collection_ids: list[int] | None = None) -> int:
        """Chunks without a vector, kept until the data changes (every search asks, for `stale`)."""
        key = (self.db.data_state(), tuple(collection_ids or ()))
        kept = self.db.derived.get("pending_vectors")
        if kept is not None and kept[0] == key:
            return int(kept[1])
        count = 0
        if self.active_model() is not None:
            row = self.db.execute(
                f"""SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id
                    WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id)
                    {"AND f.collection_id = ANY(%s)" if collection_ids else ""}""",
                (list(collection_ids),) if collection_ids else (),
            ).fetchone()
            count = int(row[0]) if row else 0
        self.db.derived["pending_vectors"] = (key, count)
        return count

    def copy_identical(self, pending: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Give chunks whose content already has a vector that vector; returns those still without.
        A chunk deleted or replaced meanwhile gets nothing (its id no longer holds that hash)."""
        if not pending or self.active_model() is None:
            return list(pending)
        ids, collections, hashes = (list(column) for column in zip(*pending, strict=True))
        with self.db.transaction():
            copied = self.db.execute(
                """INSERT INTO chunk_vectors (chunk_id, collection_id, embedding)
                   SELECT p.id, p.collection_id, donor.embedding
                   FROM unnest(%s::bigint[], %s::integer[], %s::text[]) AS p(id, collection_id, hash)
                   JOIN chunks c ON c.id = p.id AND c.hash = p.hash
                   CROSS JOIN LATERAL (
                       SELECT v.embedding FROM chunks d JOIN chunk_vectors v ON v.chunk_id = d.id
                       WHERE d.hash = p.hash AND d.id <> p.id LIMIT 1) AS donor
                   ON CONFLICT (chunk_id) DO NOTHING
                   RETURNING chunk_id""",
                (ids, collections, hashes),
            ).fetchall()
        done = {int(r[0]) for r in copied}
        left = [row for row in pending if row[0] not in done]
        return self._copy_kept(left) if left else left

    def _copy_kept(self, pending: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Give chunks the vector kept for their content after its chunk went (store/kept_vectors.py),
        which then leaves the kept set; returns those still without."""
        ids, collections, hashes = (list(column) for column in zip(*pending, strict=True))
        with self.db.transaction():
            copied = self.db.execute(
                f"""INSERT INTO chunk_vectors (chunk_id, collection_id, embedding)
                   SELECT p.id, p.collection_id, k.embedding::{self._cast()}
                   FROM unnest(%s::bigint[], %s::integer[], %s::text[]) AS p(id, collection_id, hash)
                   JOIN chunks c ON c.id = p.id AND c.hash = p.hash
                   JOIN kept_vectors k ON k.hash = p.hash
                   ON CONFLICT (chunk_id) DO NOTHING
                   RETURNING chunk_id""",
                (ids, collections, hashes),
            ).fetchall()
            done = {int(r[0]) for r in copied}
            taken = sorted({h for i, h in zip(ids, hashes, strict=True) if i in done})
            if taken:
                self.db.execute("DELETE FROM kept_vectors WHERE hash = ANY(%s)", (taken,))
        return [row for row in pending if row[0] not in done]

    def trim_kept(self) -> int:
        """Drop the oldest kept vectors past the cap (store/kept_vectors.py); returns how many."""
        kept = self.kept_count()
        if kept <= kept_vectors.KEEP_MIN:
            return 0
        with self.db.transaction():
            row = self.db.execute("SELECT count(*) FROM chunk_vectors").fetchone()
            cap = kept_vectors.kept_cap(int(row[0]) if row else 0)
            if kept <= cap:
                return 0
            return self.db.execute(
                """DELETE FROM kept_vectors WHERE kept_order <
                   (SELECT kept_order FROM kept_vectors ORDER BY kept_order DESC LIMIT 1 OFFSET %s)""",
                (cap - 1,),
            ).rowcount

    def kept_count(self) -> int:
        """Vectors kept after their chunks went, waiting for an identical chunk."""
        row = self.db.execute("SELECT count(*) FROM kept_vectors").fetchone()
        return int(row[0]) if row else 0

    def put(self, rows: Sequence[tuple[int, int, str, Sequence[float]]]) -> int:
        """Store (chunk id, collection id, content hash, vector) in one transaction; skips a chunk
        deleted meanwhile, or replaced (its id no longer holds the hash that was embedded)."""
        if not rows:
            return 0
        cast = self._cast()
        with self.db.transaction():
            return self.db.executemany(
                f"""INSERT INTO chunk_vectors (chunk_id, collection_id, embedding)
                    SELECT c.id, %s, %s::{cast} FROM chunks c WHERE c.id = %s AND c.hash = %s
                    ON CONFLICT (chunk_id) DO UPDATE
                    SET collection_id = EXCLUDED.collection_id, embedding = EXCLUDED.embedding""",
                [
                    (collection_id, vector_literal(vector), chunk_id, content_hash)
                    for chunk_id, collection_id, content_hash, vector in rows
                ],
            )

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, list[float]]:
        """chunk id -> its stored vector, for those with one (read as pgvector's text form)."""
        if self.active_model() is None or not chunk_ids:
            return {}
        rows = self.db.execute(
            "SELECT chunk_id, embedding::text FROM chunk_vectors WHERE chunk_id = ANY(%s)", (list(chunk_ids),)
        ).fetchall()
        return {int(r[0]): [float(x) for x in str(r[1]).strip("[]").split(",")] for r in rows}

    def search(self, vector: Sequence[float], collection_ids: list[int], k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first, within the given collections: the HNSW
        graph walked until k rows of those collections are found (relaxed order, so re-sorted),
        or, for a small filtered scope (EXACT_ROWS, FILTERED_SHARE), each of its vectors compared."""
        if self.active_model() is None or not collection_ids or k <= 0:
            return []  # no table to size yet
        scope_rows, table_rows = self._sizes(collection_ids)
        if scope_rows <= _exact_rows(table_rows) and scope_rows <= EXACT_SHARE * max(table_rows, scope_rows):
            return self.exact_search(vector, collection_ids, k)
        return self._nearest(vector, collection_ids, k, graph_settings(k, table_rows))

    def _sizes(self, collection_ids: list[int]) -> tuple[int, float]:
        """(vectors in these collections counted up to one past _exact_rows, the table's rows as
        the planner estimates them: -1 before its first ANALYZE). Counting through the
        collection index up to a bound costs that much at most, whatever the scope; both are
        kept until the data changes."""
        state, scope = self.db.data_state(), tuple(sorted(set(collection_ids)))
        kept = self.db.derived.get("vector_scopes")
        if kept is None or kept[0] != state:
            row = self.db.execute(
                "SELECT reltuples FROM pg_class WHERE oid = 'chunk_vectors'::regclass"
            ).fetchone()
            counted: dict[tuple[int, ...], int] = {}
            kept = (state, (float(row[0]) if row else -1.0, counted))
            self.db.derived["vector_scopes"] = kept
        table_rows, scope_rows = kept[1]
        if scope not in scope_rows:
            row = self.db.execute(
                """SELECT count(*) FROM (SELECT 1 FROM chunk_vectors
                   WHERE collection_id = ANY(%s) LIMIT %s) AS scope""",
                (list(scope), _exact_rows(table_rows) + 1),
            ).fetchone()
            scope_rows[scope] = int(row[0]) if row else 0
        return scope_rows[scope], table_rows

    def exact_search(
        self, vector: Sequence[float], collection_ids: list[int], k: int
    ) -> list[tuple[int, float]]:
        """Every vector of the collections compared (no graph): the ground truth, cost ~ vectors."""
        return self._nearest(vector, collection_ids, k, [("enable_indexscan", "off")])

    def search_among(self, vector: Sequence[float], chunk_ids: list[int], k: int) -> list[tuple[int, float]]:
        """Each of the chunks' vectors compared (read by chunk id, the graph left alone)."""
        return self._nearest(vector, chunk_ids, k, [("enable_indexscan", "off")], among="chunk_id")

    def _nearest(
        self,
        vector: Sequence[float],
        ids: list[int],
        k: int,
        settings: list[tuple[str, str]],
        among: str = "collection_id",
    ) -> list[tuple[int, float]]:
        """The k nearest of the vectors whose `among` column (collection_id, chunk_id) is in IDS."""
        if self.active_model() is None or not ids or k <= 0:
            return []
        params: dict[str, Any] = {"q": vector_literal(vector), "ids": list(ids), "k": int(k)}
        cast = self._cast()
        with self.db.transaction():
            for name, value in settings:
                self.db.execute("SELECT set_config(%s, %s, true)", (name, value))
            rows = self.db.execute(
                f"""WITH hits AS MATERIALIZED (
                        SELECT chunk_id, embedding <=> %(q)s::{cast} AS distance FROM chunk_vectors
                        WHERE {among} = ANY(%(ids)s) ORDER BY embedding <=> %(q)s::{cast} LIMIT %(k)s)
                    SELECT chunk_id, distance FROM hits ORDER BY distance""",
                params,
            ).fetchall()
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]

    def warm(self) -> int:
        """Read the vectors once (the server's buffers and the OS cache) so the first searches
        do not pay for it; returns the vectors held."""
        if self.active_model() is None:
            return 0
        row = self.db.execute("SELECT count(*) FROM chunk_vectors").fetchone()
        return int(row[0]) if row else 0


def _exact_rows(table_rows: float) -> int:
    """The most vectors a scope in a table of about `table_rows` is compared whole with."""
    return max(EXACT_ROWS, min(EXACT_ROWS_MAX, int(FILTERED_SHARE * table_rows)))


def graph_settings(k: int, table_rows: float) -> list[tuple[str, str]]:
    """The HNSW walk's settings for k hits in a table of about `table_rows` vectors: ef_search
    grows with the table (ROWS_PER_CANDIDATE), within EF_SEARCH_MIN / 2k and pgvector's cap."""
    ef_search = min(EF_SEARCH_MAX, max(EF_SEARCH_MIN, 2 * k, int(table_rows) // ROWS_PER_CANDIDATE))
    return [
        ("hnsw.iterative_scan", "relaxed_order"),
        ("hnsw.ef_search", str(ef_search)),
        # With a filter keeping half the rows the planner picks a bitmap scan of the collection
        # index and sorts every row (exact, 25x slower at 100k); the HNSW scan or, for a small
        # collection, the collection index's own scan stays open.
        ("enable_bitmapscan", "off"),
        ("enable_seqscan", "off"),
    ]
