"""The static tier's chunk vectors in the PostgreSQL index: the same contract as
store/static_vectors.py (one int8 vector per chunk with the content hash it was pooled from, so an
edited chunk is pending again; per-collection token counts for the IDF; a different static model
drops both), in the tables of schema step 2 (schema.py).

Each call is one round trip: a search reads its candidates' vectors with one `= ANY(%s)`, a batch
of the pass is written with one statement for its vectors and one for its counts. The vector is
`bytea` (bench/pg_static_storage.py). Several machines may pool the same collection at once (each
home's lock file only keeps its own processes apart): a vector already current is not written
again, so a chunk's tokens are counted once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from qmd_daemon.store.postgres.connection import PostgresDatabase
from qmd_daemon.store.postgres.schema import meta_value, set_meta
from qmd_daemon.store.static_vectors import (
    DOCS,
    DerivedValues,
    SharedStaticQueries,
    int8_blob,
    int8_vector,
    token_counts,
)

if TYPE_CHECKING:
    import numpy as np

STATIC_LOCK = 0x716D6402  # advisory lock key of a static model change (vectors.py's is ...01)


class PostgresStaticVectors(SharedStaticQueries):
    """The static tier's vectors and token counts in one PostgreSQL index."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    def active_model(self) -> str | None:
        """The fingerprint of the static model the stored vectors come from."""
        return meta_value(self.db, "static_model")

    def ensure(self, fingerprint: str) -> bool:
        """Make the tables fit this static model; True when another model's vectors were dropped."""
        current = self.active_model()
        if current == fingerprint:
            return False
        with self.db.transaction():
            self.db.advisory_lock(STATIC_LOCK)
            current = self.active_model()  # another machine may have switched meanwhile
            if current == fingerprint:
                return False
            self.db.execute("TRUNCATE static_vectors, static_token_df")
            set_meta(self.db, "static_model", fingerprint)
        return current is not None

    def _execute(self, sql: str, params: list[Any]) -> Any:
        return self.db.execute(sql, params)

    def _where(self, collection_ids: list[int]) -> tuple[str, list[Any]]:
        return "AND f.collection_id = ANY(%s)", [list(collection_ids)]

    def _derived(self) -> DerivedValues:
        return self.db

    def token_df(self, collection_id: int, tokens: Iterable[int]) -> tuple[int, dict[int, int]]:
        """(chunks of the collection counted, token -> those holding it) for the given tokens."""
        ids = sorted({int(t) for t in tokens} | {DOCS})
        rows = self.db.execute(
            "SELECT token, df FROM static_token_df WHERE collection_id = %s AND token = ANY(%s)",
            (collection_id, ids),
        )
        counts = {int(t): int(df) for t, df in rows}
        return counts.pop(DOCS, 0), counts

    def put(self, rows: Sequence[tuple[int, int, str, np.ndarray, Iterable[int]]]) -> int:
        """Store (chunk id, collection id, content hash, unit vector, its distinct tokens) in one
        transaction and count the tokens of the vectors written; a chunk deleted or changed since
        it was read, or whose vector is already of its current text, is skipped. Returns the
        vectors written."""
        ordered = sorted(rows, key=lambda row: row[0])  # two writers lock rows in one order
        if not ordered:
            return 0
        with self.db.transaction():
            written = {
                int(r[0])
                for r in self.db.execute(
                    """INSERT INTO static_vectors (chunk_id, hash, vector)
                       SELECT c.id, c.hash, r.vector
                       FROM unnest(%s::bigint[], %s::text[], %s::bytea[]) AS r(chunk_id, hash, vector)
                       JOIN chunks c ON c.id = r.chunk_id AND c.hash = r.hash
                       ORDER BY c.id
                       ON CONFLICT (chunk_id) DO UPDATE SET hash = excluded.hash, vector = excluded.vector
                       WHERE static_vectors.hash <> excluded.hash
                       RETURNING chunk_id""",
                    (
                        [row[0] for row in ordered],
                        [row[2] for row in ordered],
                        [int8_blob(row[3]) for row in ordered],
                    ),
                )
            }
            counts = token_counts((row[1], row[4]) for row in ordered if row[0] in written)
            if counts:
                self.db.execute(
                    """INSERT INTO static_token_df AS t (collection_id, token, df)
                       SELECT * FROM unnest(%s::bigint[], %s::int[], %s::bigint[])
                       ON CONFLICT (collection_id, token) DO UPDATE SET df = t.df + excluded.df""",
                    tuple(list(column) for column in zip(*counts, strict=True)),
                )
        return len(written)

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, tuple[int, np.ndarray]]:
        """chunk id -> (its collection id, its static vector: float32, not normalised), for the
        chunks whose vector is of their current text; one round trip."""
        rows = self.db.execute(
            """SELECT s.chunk_id, c.collection_id, s.vector FROM static_vectors s
               JOIN chunks c ON c.id = s.chunk_id AND c.hash = s.hash
               WHERE s.chunk_id = ANY(%s)""",
            (list(chunk_ids),),
        )
        return {int(chunk_id): (int(col), int8_vector(blob)) for chunk_id, col, blob in rows}
