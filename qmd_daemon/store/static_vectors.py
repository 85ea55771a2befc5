"""The static tier's chunk vectors (qmd_daemon/models/static_table.py) in the SQLite index.

One int8 row per chunk (`static_vectors`: 384 bytes for MiniLM's 384 dims, scaled so the largest
component is 127; a cosine ignores the scale), with the content hash of the text it was pooled
from, so an edited chunk (same id, new hash) is pending again and never scored with its old
vector. `static_token_df` counts, per collection, the chunks each token occurs in over every chunk
of it ever pooled (token -1: their number): the IDF a chunk and a question are weighted with in
that collection. Per collection, so a repository's vectors do not move when another one is added;
the counts only grow, so a stored vector stays as it was pooled (IDF is a smoothing weight: chunks
pooled early or late differ by a few percent in a token's weight). A different embedder drops
both (`ensure`). Plain SQLite blobs: sqlite-vec is not needed, and a search reads only the vectors
of lexical's candidates (a primary-key lookup each).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from qmd_daemon.store.index_store import IndexStore
else:  # numpy on first use, after llama.cpp (why: qmd_daemon/numeric.py)
    from qmd_daemon.numeric import np

STATIC_TABLES = [
    """CREATE TABLE IF NOT EXISTS static_vectors (
        chunk_id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL,
        vector BLOB NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS static_token_df (
        collection_id INTEGER NOT NULL,
        token INTEGER NOT NULL,
        df INTEGER NOT NULL,
        PRIMARY KEY (collection_id, token)
    ) WITHOUT ROWID""",
    """CREATE TRIGGER IF NOT EXISTS static_vectors_delete AFTER DELETE ON chunks BEGIN
        DELETE FROM static_vectors WHERE chunk_id = old.id;
    END""",
    """CREATE TRIGGER IF NOT EXISTS static_token_df_delete AFTER DELETE ON collections BEGIN
        DELETE FROM static_token_df WHERE collection_id = old.id;
    END""",
]
DOCS = -1  # the token whose count is the collection's chunks pooled
_ID_BATCH = 500  # ids in one `IN (...)`: under SQLite's variable limit everywhere


def int8_blob(vector: np.ndarray) -> bytes:
    """A unit vector as int8, its largest component 127 (a zero vector stays zero)."""
    values = np.asarray(vector, dtype=np.float32)
    top = float(np.abs(values).max()) if values.size else 0.0
    scaled = values * (127.0 / top) if top > 0 else values
    return np.rint(scaled).astype(np.int8).tobytes()


def token_counts(chunks: Iterable[tuple[int, Iterable[int]]]) -> list[tuple[int, int, int]]:
    """(collection id, token, chunks holding it) for CHUNKS given as (collection id, distinct
    tokens), DOCS counting the chunks, sorted (two writers lock the counts in one order)."""
    added: dict[tuple[int, int], int] = {}
    for collection_id, tokens in chunks:
        for token in (*tokens, DOCS):
            added[collection_id, token] = added.get((collection_id, token), 0) + 1
    return [(col, token, n) for (col, token), n in sorted(added.items())]


def int8_vector(blob: bytes) -> np.ndarray:
    """A stored int8 vector as float32 (not normalised: a cosine ignores the scale)."""
    return np.frombuffer(blob, dtype=np.int8).astype(np.float32)


class DerivedValues(Protocol):
    """What keeps values derived from the data: IndexStore, PostgresDatabase."""

    derived: dict[str, tuple[Any, Any]]

    def data_state(self) -> Any: ...


Coverage = tuple[int, int]  # (chunks with a current static vector, chunks)


class SharedStaticQueries(ABC):
    """`pending` and `coverage` of the static tier: the same statements on every backend, which
    gives its statement runner, its collection filter on `f.collection_id` and what keeps its
    derived values."""

    @abstractmethod
    def _execute(self, sql: str, params: list[Any]) -> Any: ...

    @abstractmethod
    def _where(self, collection_ids: list[int]) -> tuple[str, list[Any]]:
        """`AND f.collection_id` in the collections, and its parameters."""

    @abstractmethod
    def _derived(self) -> DerivedValues: ...

    def pending(self, collection_ids: list[int] | None = None) -> list[tuple[int, int, str]]:
        """(chunk id, collection id, content hash) of the chunks with no static vector of their
        current text."""
        where, params = self._where(collection_ids) if collection_ids else ("", [])
        sql = f"""SELECT c.id, f.collection_id, c.hash FROM chunks c JOIN files f ON f.id = c.file_id
                  LEFT JOIN static_vectors s ON s.chunk_id = c.id
                  WHERE (s.chunk_id IS NULL OR s.hash <> c.hash) {where} ORDER BY c.id"""
        return [(int(r[0]), int(r[1]), str(r[2])) for r in self._execute(sql, params)]

    def coverage(self, collection_ids: list[int] | None = None) -> Coverage:
        """(chunks with a current static vector, chunks) in the collections (all: None). A count
        reads every chunk (~1 s at 225k chunks, cold), so counts are kept until the data changes."""
        owner = self._derived()
        state = owner.data_state()
        kept = owner.derived.get("static_coverage")
        if kept is None or kept[0] != state:
            kept = (state, {})
            owner.derived["static_coverage"] = kept
        key = tuple(collection_ids or ())
        if key not in kept[1]:
            kept[1][key] = self._count(collection_ids)
        result: Coverage = kept[1][key]
        return result

    def _count(self, collection_ids: list[int] | None) -> Coverage:
        where, params = self._where(collection_ids) if collection_ids else ("", [])
        row = self._execute(
            f"""SELECT count(s.chunk_id), count(*) FROM chunks c JOIN files f ON f.id = c.file_id
                LEFT JOIN static_vectors s ON s.chunk_id = c.id AND s.hash = c.hash
                WHERE 1 = 1 {where}""",
            params,
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)


class StaticVectors(SharedStaticQueries):
    """The static tier's vectors and token counts inside one SQLite index."""

    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self.conn: Any = store.conn

    def active_model(self) -> str | None:
        """The fingerprint of the static model the stored vectors come from."""
        return self.store.meta_value("static_model")

    def ensure(self, fingerprint: str) -> bool:
        """Make the tables fit this static model; True when another model's vectors were dropped."""
        current = self.active_model()
        if current == fingerprint:
            return False
        with self.store.transaction():
            self.conn.execute("DELETE FROM static_vectors")
            self.conn.execute("DELETE FROM static_token_df")
            self.store.set_meta("static_model", fingerprint)
        return current is not None

    def _execute(self, sql: str, params: list[Any]) -> Any:
        return self.conn.execute(sql, params)

    def _where(self, collection_ids: list[int]) -> tuple[str, list[Any]]:
        return f"AND f.collection_id IN ({','.join('?' * len(collection_ids))})", list(collection_ids)

    def _derived(self) -> DerivedValues:
        return self.store

    def token_df(self, collection_id: int, tokens: Iterable[int]) -> tuple[int, dict[int, int]]:
        """(chunks of the collection counted, token -> those holding it) for the given tokens."""
        ids = sorted({int(t) for t in tokens} | {DOCS})
        counts: dict[int, int] = {}
        for start in range(0, len(ids), _ID_BATCH):
            part = ids[start : start + _ID_BATCH]
            rows = self.conn.execute(
                f"""SELECT token, df FROM static_token_df
                    WHERE collection_id = ? AND token IN ({','.join('?' * len(part))})""",
                [collection_id, *part],
            )
            counts.update((int(t), int(df)) for t, df in rows)
        return counts.pop(DOCS, 0), counts

    def put(self, rows: Sequence[tuple[int, int, str, np.ndarray, Iterable[int]]]) -> int:
        """Store (chunk id, collection id, content hash, unit vector, its distinct tokens) in one
        transaction and count the tokens; a chunk deleted or changed since it was read (its id
        reused, another hash) is skipped. Returns the vectors written."""
        written: list[tuple[int, Iterable[int]]] = []
        with self.store.transaction():
            for chunk_id, collection_id, content_hash, vector, tokens in rows:
                if not self.conn.execute("SELECT 1 FROM chunks WHERE id = ? AND hash = ?",
                                         (chunk_id, content_hash)).fetchone():
                    continue
                self.conn.execute(
                    "INSERT OR REPLACE INTO static_vectors (chunk_id, hash, vector) VALUES (?, ?, ?)",
                    (chunk_id, content_hash, int8_blob(vector)),
                )
                written.append((collection_id, tokens))
            self.conn.executemany(
                "INSERT INTO static_token_df (collection_id, token, df) VALUES (?, ?, ?) "
                "ON CONFLICT (collection_id, token) DO UPDATE SET df = df + excluded.df",
                token_counts(written),
            )
        return len(written)

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, tuple[int, np.ndarray]]:
        """chunk id -> (its collection id, its static vector: float32, not normalised), for the
        chunks whose vector is of their current text."""
        out: dict[int, tuple[int, np.ndarray]] = {}
        ids = list(chunk_ids)
        for start in range(0, len(ids), _ID_BATCH):
            part = ids[start : start + _ID_BATCH]
            rows = self.conn.execute(
                f"""SELECT s.chunk_id, f.collection_id, s.vector FROM static_vectors s
                    JOIN chunks c ON c.id = s.chunk_id AND c.hash = s.hash JOIN files f ON f.id = c.file_id
                    WHERE s.chunk_id IN ({','.join('?' * len(part))})""",
                part,
            )
            for chunk_id, collection_id, blob in rows:
                out[int(chunk_id)] = (int(collection_id), int8_vector(blob))
        return out
