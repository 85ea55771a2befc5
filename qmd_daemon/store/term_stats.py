"""How many chunks of each collection hold each FTS5 token, kept as chunks are written and removed
(the SQLite side of PostgreSQL's `term_stats`).

A word's document frequency used to be a `count(*)` of its MATCH: FTS5 reads the word's whole
posting list to count it (`py`: 325k chunks, 38 ms at 503k chunks), and a bug report counts 40
words the first time it is asked. With this table a word's count is an index lookup whatever its
frequency; a word that is not one token is still counted by FTS5 (IndexStore.fts_count).

The counts come from FTS5 itself: the rows a change adds (or removes) are also written to a
connection-private, contentless FTS5 table with the index's tokenizer, whose fts5vocab `row`
table then holds each token's number of rows, the change's counts. All of it runs in SQLite, in
C (counting the tokens in Python took a third of a first index's time), and the counts are the
index's own tokens by construction. The staging table is in `temp`, so a rolled-back change
takes its staged rows with it.
"""

from __future__ import annotations

from typing import Any

from qmd_daemon.progress import progress_bar
from qmd_daemon.store.fts_tokens import FTS_TOKENIZER

TERM_STATS_TABLE = """CREATE TABLE IF NOT EXISTS term_stats (
    token TEXT NOT NULL,
    collection_id INTEGER NOT NULL,
    df INTEGER NOT NULL,
    PRIMARY KEY (token, collection_id)
) WITHOUT ROWID"""

FtsRow = tuple[str, str, str, str]  # a chunks_fts row: collection, path, symbols, body
FILL_BATCH = 20_000  # chunks staged at once by fill(): the staging table's size in memory
_ID_BATCH = 500  # ids in one `IN (...)`: under SQLite's variable limit everywhere
_STAGES = ("term_added", "term_removed")


class PendingCounts:
    """A transaction's changes to the counts, staged as FTS rows and applied once, before it
    commits (applied per file, the counting took 12% of a first index's time). All staged rows
    belong to one collection: a change to another collection applies what is staged first."""

    def __init__(self, conn: Any):
        """Creates the staging tables; outside a write transaction, since creating them inside
        one makes FTS5 write the transaction's rows so far to a segment of their own."""
        self.conn = conn
        self.collection_id: int | None = None
        for table in _STAGES:
            conn.execute(
                f"""CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table} USING fts5(
                    collection, path, symbols, body, tokenize = "{FTS_TOKENIZER}", content = '', detail = none
                )"""
            )
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_rows USING fts5vocab(temp, {table}, row)"
            )

    def _stage(self, collection_id: int) -> None:
        if self.collection_id not in (None, collection_id):
            self.apply()
        self.collection_id = collection_id

    def add(self, collection_id: int, rows: list[FtsRow]) -> None:
        """Count ROWS, FTS rows written for the collection."""
        self._stage(collection_id)
        self.conn.executemany(
            "INSERT INTO temp.term_added (collection, path, symbols, body) VALUES (?, ?, ?, ?)", rows
        )

    def add_indexed(self, collection_id: int, chunk_ids: list[int]) -> None:
        """Count the chunks' FTS rows as the index holds them."""
        self._stage(collection_id)
        self._copy_indexed("term_added", chunk_ids)

    def remove(self, collection_id: int, chunk_ids: list[int]) -> None:
        """Take the chunks' tokens out of the counts; call before their FTS rows are deleted."""
        if chunk_ids:
            self._stage(collection_id)
            self._copy_indexed("term_removed", chunk_ids)

    def _copy_indexed(self, table: str, chunk_ids: list[int]) -> None:
        for start in range(0, len(chunk_ids), _ID_BATCH):
            batch = chunk_ids[start : start + _ID_BATCH]
            self.conn.execute(
                f"""INSERT INTO temp.{table} (collection, path, symbols, body)
                    SELECT collection, path, symbols, body FROM chunks_fts
                    WHERE rowid IN ({",".join("?" * len(batch))})""",
                batch,
            )

    def apply(self) -> None:
        """Write what is staged into term_stats and empty the stage; a token no chunk of the
        collection holds any more loses its row."""
        if self.collection_id is None:
            return
        for table, sign in (("term_added", 1), ("term_removed", -1)):
            self.conn.execute(
                f"""INSERT INTO term_stats (token, collection_id, df)
                    SELECT term, ?, ? * doc FROM temp.{table}_rows WHERE true
                    ON CONFLICT (token, collection_id) DO UPDATE SET df = df + excluded.df""",
                (self.collection_id, sign),
            )
        self.conn.execute(
            """DELETE FROM term_stats WHERE collection_id = ? AND df <= 0
               AND token IN (SELECT term FROM temp.term_removed_rows)""",
            (self.collection_id,),
        )
        for table in _STAGES:
            self.conn.execute(f"INSERT INTO temp.{table} ({table}) VALUES ('delete-all')")
        self.collection_id = None

    def discard(self) -> None:
        """The transaction rolled back, and the staged rows with it."""
        self.collection_id = None


def fill(conn: Any) -> None:
    """Count every FTS row already indexed (the migration of an index made before the table), from
    nothing: a step run again recounts."""
    conn.execute("DELETE FROM term_stats")
    owners = conn.execute(
        "SELECT f.collection_id, c.id FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY 1, 2"
    ).fetchall()
    counts = PendingCounts(conn)
    # a bar on a terminal: seconds of CPU at 500k chunks
    with progress_bar("counting words", " chunks", None, total=len(owners)) as bar:
        for start in range(0, len(owners), FILL_BATCH):
            batch = owners[start : start + FILL_BATCH]
            for collection_id in dict.fromkeys(cid for cid, _ in batch):
                counts.add_indexed(int(collection_id), [int(c) for cid, c in batch if cid == collection_id])
            counts.apply()
            bar.update(len(batch))


def counts(conn: Any, tokens: set[str], collection_ids: list[int] | None) -> dict[str, int]:
    """Chunks of the collections (None: of every collection) holding each of TOKENS, in one
    statement a batch of _ID_BATCH: a question's feedback words are 60 counts at once."""
    found: dict[str, int] = dict.fromkeys(tokens, 0)
    ordered = sorted(tokens)
    scope = "" if collection_ids is None else f" AND collection_id IN ({','.join('?' * len(collection_ids))})"
    for start in range(0, len(ordered), _ID_BATCH):
        batch = ordered[start : start + _ID_BATCH]
        rows = conn.execute(
            f"SELECT token, sum(df) FROM term_stats WHERE token IN ({','.join('?' * len(batch))}){scope}"
            " GROUP BY token",
            (*batch, *(collection_ids or ())),
        )
        found.update((str(token), int(df)) for token, df in rows)
    return found
