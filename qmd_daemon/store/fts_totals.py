"""How many rows an FTS5 table holds, read from FTS5's own "averages" record.

FTS5 keeps its row total (bm25's N) in the record of rowid 1 of its `_data` table, a SQLite
varint followed by each column's token total, and rewrites it as every write transaction commits
(fts5_index.c, FTS5_AVERAGES_ROWID; fts5_storage.c, sqlite3Fts5StorageSync). Reading it is one
page. `SELECT count(*) FROM chunks` walks the smallest index of the table instead: 7.6 MB at 503k
chunks, 4 ms of CPU with the file in the page cache and 180 ms of wall with it out, paid by the
first search after every write and after a start (search/lexical.py keeps the total until the
data changes). Inside a write transaction the record can lag the rows written, so callers count
there (IndexStore.chunks_in).
"""

from __future__ import annotations

from typing import Any

FTS5_AVERAGES_ROWID = 1


def read_varint(data: bytes) -> int:
    """SQLite's varint at the start of `data`: big-endian 7 bits a byte while the high bit is set,
    a ninth byte contributing all 8 of its bits."""
    value = 0
    for at in range(8):
        value = (value << 7) | (data[at] & 0x7F)
        if not data[at] & 0x80:
            return value
    return (value << 8) | data[8]


def fts_row_count(conn: Any, table: str) -> int:
    """Rows of the FTS5 table `table` as of the last commit (0 before its first row: FTS5 writes
    the record with its first write)."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?", (FTS5_AVERAGES_ROWID,)).fetchone()
    return read_varint(bytes(row[0])) if row is not None and row[0] else 0
