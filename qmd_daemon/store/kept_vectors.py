"""Deep vectors kept after their chunks are gone, keyed by content hash (SQLite; the same rules
for PostgreSQL in store/postgres/vectors.py).

Why: agents switch branches all day. Leaving a branch deleted its files' chunks with their deep
vectors, so switching back made identical chunks (same content hash) with no twin left anywhere:
main -> v2.0.0 -> main on psf/requests sent 680 of 783 chunks back to the embedder (minutes on a
CPU, keyword-only results meanwhile). A chunk's vector is now kept as the chunk goes, by the same
trigger that deletes it (one transaction: a crash keeps both or neither), and a chunk that comes
back with that hash takes it by copy (VectorIndex.copy_identical: at update time and in the embed
job), never embedded again.

Bounded and honest:
- only the active model's: `kept_vectors` is emptied whenever the vector table is made for
  another model, dimension or quantization (VectorIndex.ensure), so a kept vector is always the
  active fingerprint's; keyed (fingerprint, hash) in effect;
- never searched: KNN and the static step read chunk_vectors / chunk_codes only; a vector taken
  back leaves this table;
- at most max(KEEP_MIN, KEEP_SHARE x live vectors), oldest dropped first (`trim`, after each
  update): bench/vector_keep.py measures 2.1 KB a kept 384-dim float vector, 4.7 KB at 1024
  (0.6 / 1.5 KB int8), the hash and its index included;
- gone with its collection: `collection remove` (any flavour) drops the kept vectors of the
  removed collection's chunks (IndexStore.remove_collection), since a user removing a collection
  asked to forget it (docs/security.md).
"""

from __future__ import annotations

from typing import Any

# The cap: kept vectors at most max(KEEP_MIN, KEEP_SHARE x the live ones). 10,000 holds the chunks
# several branch switches of a large repository leave (main -> v2.0.0 of requests left 776) and
# costs at most 21 MB at 384 float dims, 47 MB at 1024 (6 / 15 MB int8; bench/vector_keep.py),
# against 10,000 chunks embedded again: hours at the production embedder's <1 chunk/s on a CPU.
KEEP_MIN = 10_000
KEEP_SHARE = 0.25

# `id` orders by age: INSERT OR REPLACE gives a kept-again hash a new, highest rowid.
KEPT_TABLE = """CREATE TABLE IF NOT EXISTS kept_vectors (
    id INTEGER PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    collection_id INTEGER NOT NULL,
    embedding BLOB NOT NULL
)"""
KEPT_BY_COLLECTION = "CREATE INDEX IF NOT EXISTS kept_vectors_by_collection ON kept_vectors(collection_id)"

# A deleted chunk's vector row: kept under its hash, then deleted (vec0 has no foreign keys).
DELETE_TRIGGER = """CREATE TRIGGER chunk_vectors_delete AFTER DELETE ON chunks BEGIN
    INSERT OR REPLACE INTO kept_vectors (hash, collection_id, embedding)
        SELECT old.hash, collection_id, embedding FROM chunk_vectors WHERE rowid = old.id;
    DELETE FROM chunk_vectors WHERE rowid = old.id;
END"""


def has_vector_table(conn: Any) -> bool:
    return bool(conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'chunk_vectors'"
    ).fetchone())


def forget_vectors_of(conn: Any, chunk_ids: list[int]) -> None:
    """Delete these chunks' deep vectors before the chunks themselves, so that the delete trigger
    keeps none: a removed collection is forgotten, and keeping each vector only to drop it with
    the collection cost collection remove 0.1 ms a chunk (vectorkeep)."""
    if has_vector_table(conn):
        conn.executemany("DELETE FROM chunk_vectors WHERE rowid = ?", ((i,) for i in chunk_ids))


def keep_on_delete(conn: Any) -> None:
    """Schema 10's step: the kept table, and an index embedded by older code has its vectors'
    delete trigger made again to keep them (an index with no vector table gets it from ensure)."""
    conn.execute(KEPT_TABLE)
    conn.execute(KEPT_BY_COLLECTION)
    if has_vector_table(conn):
        conn.execute("DROP TRIGGER IF EXISTS chunk_vectors_delete")
        conn.execute(DELETE_TRIGGER)


def kept_cap(live: int) -> int:
    """The most vectors kept beside LIVE ones."""
    return max(KEEP_MIN, int(KEEP_SHARE * live))


def take(conn: Any, content_hash: str) -> bytes | None:
    """The kept vector of this content (as chunk_vectors stored it), removed from the kept set:
    the caller makes it a live chunk's, inside its transaction."""
    row = conn.execute("SELECT id, embedding FROM kept_vectors WHERE hash = ?", (content_hash,)).fetchone()
    if row is None:
        return None
    conn.execute("DELETE FROM kept_vectors WHERE id = ?", (row[0],))
    return bytes(row[1])


def trim(conn: Any) -> int:
    """Drop the oldest kept vectors past the cap (inside the caller's transaction); returns how
    many went. Counts through the hash index, and the live vectors only past KEEP_MIN."""
    kept = int(conn.execute("SELECT count(*) FROM kept_vectors").fetchone()[0])
    if kept <= KEEP_MIN:
        return 0
    cap = kept_cap(int(conn.execute("SELECT count(*) FROM chunk_codes").fetchone()[0]))
    if kept <= cap:
        return 0
    return int(
        conn.execute(
            """DELETE FROM kept_vectors
               WHERE id < (SELECT id FROM kept_vectors ORDER BY id DESC LIMIT 1 OFFSET ?)""",
            (cap - 1,),
        ).rowcount
    )
