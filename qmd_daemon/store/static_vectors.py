"""The static tier's chunk vectors (qmd_daemon/models/static_table.py) in the SQLite index.

One int8 row per chunk (`static_vectors`: 384 bytes for MiniLM's 384 dims, scaled so the largest
component is 127; a cosine ignores the scale), with the content hash of the text it was pooled
from, so an edited chunk (same id, new hash) is pending again and never scored with its old
vector. `static_token_df` counts the chunks each token occurs in over every chunk ever pooled
(`static_docs` in `meta` their number): the IDF a chunk and a query are weighted with. It only
grows, so a stored vector stays as it was pooled; IDF is a smoothing weight, and chunks pooled
early or late differ by a few percent at most in any token's weight. A different embedder drops
both (`ensure`). Plain SQLite blobs: sqlite-vec is not needed, and a search reads only the vectors
of lexical's candidates (a primary-key lookup each).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

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
        token INTEGER PRIMARY KEY,
        df INTEGER NOT NULL
    )""",
    """CREATE TRIGGER IF NOT EXISTS static_vectors_delete AFTER DELETE ON chunks BEGIN
        DELETE FROM static_vectors WHERE chunk_id = old.id;
    END""",
]
_ID_BATCH = 500  # ids in one `IN (...)`: under SQLite's variable limit everywhere


def int8_blob(vector: Any) -> bytes:
    """A unit vector as int8, its largest component 127 (a zero vector stays zero)."""
    values = np.asarray(vector, dtype=np.float32)
    top = float(np.abs(values).max()) if values.size else 0.0
    scaled = values * (127.0 / top) if top > 0 else values
    return np.rint(scaled).astype(np.int8).tobytes()


def _scope(collection_ids: list[int] | None) -> tuple[str, list[Any]]:
    if not collection_ids:
        return "", []
    return f"AND f.collection_id IN ({','.join('?' * len(collection_ids))})", list(collection_ids)


class StaticVectors:
    """The static tier's vectors and token counts inside one SQLite index."""

    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self.conn: Any = store.conn

    def _meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def active_model(self) -> str | None:
        """The fingerprint of the static model the stored vectors come from."""
        return self._meta("static_model")

    def ensure(self, fingerprint: str) -> bool:
        """Make the tables fit this static model; True when another model's vectors were dropped."""
        current = self.active_model()
        if current == fingerprint:
            return False
        with self.store.transaction():
            self.conn.execute("DELETE FROM static_vectors")
            self.conn.execute("DELETE FROM static_token_df")
            self._set_meta("static_model", fingerprint)
            self._set_meta("static_docs", "0")
        return current is not None

    def pending(
        self, collection_ids: list[int] | None = None, limit: int | None = None
    ) -> list[tuple[int, str]]:
        """(chunk id, content hash) of the chunks with no static vector of their current text."""
        where, params = _scope(collection_ids)
        sql = f"""SELECT c.id, c.hash FROM chunks c JOIN files f ON f.id = c.file_id
                  LEFT JOIN static_vectors s ON s.chunk_id = c.id
                  WHERE (s.chunk_id IS NULL OR s.hash != c.hash) {where} ORDER BY c.id"""
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [(int(r[0]), str(r[1])) for r in self.conn.execute(sql, params)]

    def coverage(self, collection_ids: list[int] | None = None) -> tuple[int, int]:
        """(chunks with a current static vector, chunks) in the collections (all: None)."""
        where, params = _scope(collection_ids)
        row = self.conn.execute(
            f"""SELECT count(s.chunk_id), count(*) FROM chunks c JOIN files f ON f.id = c.file_id
                LEFT JOIN static_vectors s ON s.chunk_id = c.id AND s.hash = c.hash
                WHERE 1 {where}""",
            params,
        ).fetchone()
        return int(row[0]), int(row[1])

    def token_df(self, tokens: Iterable[int]) -> tuple[int, dict[int, int]]:
        """(chunks counted, token -> chunks holding it) for the given tokens."""
        docs = int(self._meta("static_docs") or 0)
        ids = sorted({int(t) for t in tokens})
        counts: dict[int, int] = {}
        for start in range(0, len(ids), _ID_BATCH):
            part = ids[start : start + _ID_BATCH]
            rows = self.conn.execute(
                f"SELECT token, df FROM static_token_df WHERE token IN ({','.join('?' * len(part))})", part
            )
            counts.update((int(t), int(df)) for t, df in rows)
        return docs, counts

    def put(self, rows: Sequence[tuple[int, str, Any, Iterable[int]]]) -> int:
        """Store (chunk id, content hash, unit vector, its distinct tokens) in one transaction and
        count the tokens; a chunk deleted or changed since it was read (its id reused, another
        hash) is skipped. Returns the vectors written."""
        written = 0
        added: dict[int, int] = {}
        with self.store.transaction():
            for chunk_id, content_hash, vector, tokens in rows:
                if not self.conn.execute("SELECT 1 FROM chunks WHERE id = ? AND hash = ?",
                                         (chunk_id, content_hash)).fetchone():
                    continue
                self.conn.execute(
                    "INSERT OR REPLACE INTO static_vectors (chunk_id, hash, vector) VALUES (?, ?, ?)",
                    (chunk_id, content_hash, int8_blob(vector)),
                )
                for token in tokens:
                    added[token] = added.get(token, 0) + 1
                written += 1
            self.conn.executemany(
                "INSERT INTO static_token_df (token, df) VALUES (?, ?) "
                "ON CONFLICT (token) DO UPDATE SET df = df + excluded.df",
                sorted(added.items()),
            )
            docs = int(self._meta("static_docs") or 0) + written
            self._set_meta("static_docs", str(docs))
        return written

    def vectors_of(self, chunk_ids: Sequence[int]) -> dict[int, Any]:
        """chunk id -> its static vector (float32, not normalised), for the chunks whose vector is
        of their current text."""
        out: dict[int, Any] = {}
        ids = list(chunk_ids)
        for start in range(0, len(ids), _ID_BATCH):
            part = ids[start : start + _ID_BATCH]
            rows = self.conn.execute(
                f"""SELECT s.chunk_id, s.vector FROM static_vectors s JOIN chunks c
                    ON c.id = s.chunk_id AND c.hash = s.hash
                    WHERE s.chunk_id IN ({','.join('?' * len(part))})""",
                part,
            )
            for chunk_id, blob in rows:
                out[int(chunk_id)] = np.frombuffer(blob, dtype=np.int8).astype(np.float32)
        return out
