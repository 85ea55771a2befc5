"""How many chunks of each collection hold each FTS5 token, kept as chunks are written and removed
(the SQLite side of PostgreSQL's `term_stats`).

A word's document frequency used to be a `count(*)` of its MATCH: FTS5 reads the word's whole
posting list to count it (`py`: 325k chunks, 38 ms at 503k chunks), and a bug report counts 40
words the first time it is asked. With this table a word's count is an index lookup whatever its
frequency. The tokens are text/tokens.py's, which mirror the FTS5 tokenizer (its tests check the
agreement); a word that is not one token is still counted by FTS5 (IndexStore.fts_count).
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from tqdm import tqdm

from qmd_daemon.text.tokens import index_tokens

TERM_STATS_TABLE = """CREATE TABLE IF NOT EXISTS term_stats (
    token TEXT NOT NULL,
    collection_id INTEGER NOT NULL,
    df INTEGER NOT NULL,
    PRIMARY KEY (token, collection_id)
) WITHOUT ROWID"""

_COLLECTION_TOKEN = "qmdcol"  # store/fts5_query.fts_collection_token's prefix
FILL_BATCH = 500_000  # (token, collection) pairs held in memory by fill() before they are written

Tally = Counter[tuple[str, int]]


def _collection_id(token: str) -> int:
    """The collection of an FTS row, from its `collection` column's one token."""
    return int(token.removeprefix(_COLLECTION_TOKEN))


def row_tokens(*columns: str) -> set[str]:
    """The distinct tokens of one FTS row's columns: a chunk counts once per token."""
    return {token for column in columns for token in index_tokens(column)}


def add_rows(tally: Tally, collection_id: int, rows: list[tuple[str, ...]], sign: int) -> None:
    """Count each row's tokens into TALLY for the collection (sign 1: rows added, -1: removed)."""
    for row in rows:
        for token in row_tokens(*row):
            tally[(token, collection_id)] += sign


def write(conn: Any, tally: Tally) -> None:
    """Apply TALLY's changes to the table; a token no chunk of a collection holds any more loses
    its row."""
    changes = [(token, cid, delta) for (token, cid), delta in tally.items() if delta]
    conn.executemany(
        """INSERT INTO term_stats (token, collection_id, df) VALUES (?, ?, ?)
           ON CONFLICT (token, collection_id) DO UPDATE SET df = df + excluded.df""",
        changes,
    )
    gone = [(token, cid) for token, cid, delta in changes if delta < 0]
    conn.executemany("DELETE FROM term_stats WHERE token = ? AND collection_id = ? AND df <= 0", gone)
    tally.clear()


def fts_rows(conn: Any, chunk_ids: list[int]) -> list[tuple[int, tuple[str, ...]]]:
    """(collection id, (collection, path, symbols, body)) of the chunks' FTS rows, as indexed."""
    out: list[tuple[int, tuple[str, ...]]] = []
    for start in range(0, len(chunk_ids), 500):
        batch = chunk_ids[start : start + 500]
        marks = ",".join("?" * len(batch))
        for collection, path, symbols, body in conn.execute(
            f"SELECT collection, path, symbols, body FROM chunks_fts WHERE rowid IN ({marks})", batch
        ):
            out.append((_collection_id(collection), (collection, path, symbols, body)))
    return out


def remove_chunks(conn: Any, chunk_ids: list[int]) -> None:
    """Take the chunks' tokens out of the counts; call before their FTS rows are deleted."""
    tally: Tally = Counter()
    for collection_id, row in fts_rows(conn, chunk_ids):
        add_rows(tally, collection_id, [row], -1)
    write(conn, tally)


def fill(conn: Any) -> None:
    """Count every FTS row already indexed (the migration of an index made before the table), from
    nothing: a step run again recounts."""
    conn.execute("DELETE FROM term_stats")
    tally: Tally = Counter()
    total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    rows = conn.execute("SELECT collection, path, symbols, body FROM chunks_fts")
    # ~80 s of CPU at 500k chunks: a bar on a terminal (tqdm leaves it out elsewhere)
    for row in tqdm(rows, total=total, desc="counting words", unit=" chunks", disable=None, file=sys.stderr):
        add_rows(tally, _collection_id(row[0]), [row], 1)
        if len(tally) >= FILL_BATCH:
            write(conn, tally)
    write(conn, tally)


def count(conn: Any, token: str, collection_ids: list[int] | None) -> int:
    """Chunks of the collections (None: of every collection) holding TOKEN."""
    if collection_ids is None:
        row = conn.execute("SELECT coalesce(sum(df), 0) FROM term_stats WHERE token = ?", (token,)).fetchone()
    else:
        marks = ",".join("?" * len(collection_ids))
        row = conn.execute(
            f"SELECT coalesce(sum(df), 0) FROM term_stats WHERE token = ? AND collection_id IN ({marks})",
            (token, *collection_ids),
        ).fetchone()
    return int(row[0])
