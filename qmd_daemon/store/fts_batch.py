"""A write transaction's FTS5 row changes, held back and written in rowid order when it ends.

FTS5 keeps a transaction's new rows in memory and writes them to the index as one segment at
commit, but it must write them out early, as a segment of their own, whenever a write goes back
in rowid order (a delete or insert below the last rowid written, or a delete then an insert of
one rowid). An update that wrote each changed file's rows in turn (delete the old chunks, insert
the new ones) made one segment per changed file: 20 edited files, 14 segments; a re-chunk of every
file, one per file. Every MATCH looks each term up in every segment, and merging them cost 4-5 s
of CPU at 503k chunks. Held back and sorted, all deletes and then all inserts make at most two.

The rows' term counts (store/term_stats.py): a removed row's tokens are staged as it goes, read
back from the index, so the FTS5 delete can wait; a new row's when it is written. Reads of
chunks_fts inside a transaction must call flush() first (IndexStore does); outside one nothing is
held. A first index of a big
repository is one transaction: past MAX_HELD_BYTES of row text the batch is written out early
(FTS5 itself writes a segment per megabyte or so of pending rows; a first index's rows come in
rowid order, so this costs it no segment).
"""

from __future__ import annotations

from typing import Any

from qmd_daemon.store.term_stats import FtsRow, PendingCounts

MAX_HELD_BYTES = 16 * 2**20  # row text held before an early flush


class FtsBatch:
    def __init__(self, conn: Any):
        self.conn = conn
        self.counts = PendingCounts(conn)
        self._deletes: set[int] = set()  # rowids whose row in chunks_fts is to go
        # rowid -> (its collection's id, its new row), not yet in chunks_fts nor in the counts
        self._inserts: dict[int, tuple[int, FtsRow]] = {}
        self._held = 0  # characters of row text in _inserts (an upper bound)

    def insert(self, collection_id: int, chunk_id: int, row: FtsRow) -> None:
        self._inserts[chunk_id] = (collection_id, row)
        self._held += sum(len(column) for column in row)
        if self._held > MAX_HELD_BYTES:
            self.flush()

    def delete(self, collection_id: int, chunk_ids: list[int], *, count: bool = True) -> None:
        """The chunks' rows go (`count`: their tokens leave the counts; a collection removed
        whole drops its counts at once). A row still held was never counted: it just goes."""
        held = {i for i in chunk_ids if self._inserts.pop(i, None) is not None}
        # a held row's id has no other row in chunks_fts but one already queued for deletion
        indexed = [i for i in chunk_ids if i not in self._deletes and i not in held]
        if count:
            self.counts.remove(collection_id, indexed)
        self._deletes.update(chunk_ids)

    def flush(self) -> None:
        """Write what is held to chunks_fts (deletes, then inserts, each in rowid order) and the
        term counts to term_stats."""
        if self._deletes:
            gone = [(i,) for i in sorted(self._deletes)]
            self.conn.executemany("DELETE FROM chunks_fts WHERE rowid = ?", gone)
            self._deletes.clear()
        if self._inserts:
            held = sorted(self._inserts.items())
            self.conn.executemany(
                "INSERT INTO chunks_fts (rowid, collection, path, symbols, body) VALUES (?, ?, ?, ?, ?)",
                [(i, *row) for i, (_, row) in held],
            )
            # counted here, one statement a collection: one a row was 8% of a first index's CPU
            by_collection: dict[int, list[FtsRow]] = {}
            for _, (collection_id, row) in held:
                by_collection.setdefault(collection_id, []).append(row)
            for collection_id, rows in by_collection.items():
                self.counts.add(collection_id, rows)
            self._inserts.clear()
        self._held = 0
        self.counts.apply()

    def discard(self) -> None:
        """The transaction rolled back, and with it everything written for it."""
        self._deletes.clear()
        self._inserts.clear()
        self._held = 0
        self.counts.discard()
