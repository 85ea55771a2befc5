"""Typed reads and writes on the index. Callers hold one transaction per collection update."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from qmd_daemon.errors import QueryRejected
from qmd_daemon.store import file_stems, term_stats
from qmd_daemon.store.chunk_plan import StoredChunks, plan_chunks
from qmd_daemon.store.connection import (
    DatabaseError,
    connect,
    index_error,
    rejected_queries,
    write_transaction,
)
from qmd_daemon.store.fts5_query import fts_collection_token, match_expression, quote, scoped_match
from qmd_daemon.store.fts_batch import FtsBatch
from qmd_daemon.store.fts_tokens import query_tokens, query_tokens_of
from qmd_daemon.store.fts_totals import fts_row_count
from qmd_daemon.store.kept_vectors import forget_vectors_of
from qmd_daemon.store.lexical_query import LexicalQuery, Word
from qmd_daemon.store.protocols import ChunkRow, FileState
from qmd_daemon.store.schema import migrate, refused_to_older_code
from qmd_daemon.text.analysis import fts_body, fts_path, fts_symbols
from qmd_daemon.text.chunk_model import Chunk

_CHUNK_SELECT = """
    SELECT c.id, c.file_id, col.name, f.path, f.kind, f.language, c.start_line, c.end_line,
           c.text, c.symbols, c.signature, c.heading, c.hash
    FROM chunks c JOIN files f ON f.id = c.file_id JOIN collections col ON col.id = f.collection_id
"""


# chunks_matching's ids closer than this share one `rowid BETWEEN` range: FTS5 seeks to a range's
# first posting and reads only the range, so a range costs one seek plus the postings in it. A
# file's chunks have neighbouring ids (written together), and a question's sibling windows fall
# in ~4 ranges of 1,000 ids (48 ids on average, the 90 dev questions at 503k chunks).
MATCH_RANGE_GAP = 1000
# definitions' rows in one order on every backend (PostgreSQL's: name and kind COLLATE "C", the
# bytes SQLite's BINARY compares): `_resolve_defined_word` takes the first case found
_DEFINITION_ORDER = "d.chunk_id, d.line, d.name, d.kind"

# FTS5 segments from which a merge of all of them starts. Every write transaction adds a segment
# and FTS5's automerge (4 a level) leaves up to 3 a level: the bench home at 503k chunks held 25,
# then 9 after a full re-chunk, and a MATCH looks each term up in every segment. Merged from 9,
# the 90 dev questions' strict pass cost 3.9-5.2 against 9.5-9.8 ms.
MAX_FTS_SEGMENTS = 8

# Leaf pages (FTS5's pgsz, 4,050 bytes) one merge step writes at most. A merge of all segments
# rewrites the whole index (52k pages at 503k chunks: 4-5 s of CPU as one 'optimize', which an
# edit's refresh paid once in 30-60 writing updates); a step of 1,000 pages took 56 ms of CPU
# there. So each writing update does one step, the daemon more while idle (daemon/jobs.py).
FTS_MERGE_PAGES = 1000


# fts_search among files: when they are at least this share of the scope's files, the unfiltered
# best (limit / share x AMONG_MARGIN) are read and filtered, else every match's file is looked up.
AMONG_SHARE = 0.2
AMONG_MARGIN = 3.0  # tests and docs, left out most, match more than their share


def id_ranges(ids: Iterable[int], gap: int) -> list[tuple[int, int]]:
    """(first, last) of each run of the sorted ids whose neighbours are at most `gap` apart."""
    ranges: list[tuple[int, int]] = []
    for i in sorted(ids):
        if ranges and i - ranges[-1][1] <= gap:
            ranges[-1] = (ranges[-1][0], i)
        else:
            ranges.append((i, i))
    return ranges


def _batches(items: list[str], size: int = 500) -> Iterator[list[str]]:
    """Slices small enough for one statement's bound parameters."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


class IndexStore:
    """The SQLite ChunkStore (store/protocols.py): one file, FTS5 for keyword search."""

    def __init__(self, path: Path):
        self.path = path
        self.conn, self.supports_vectors = connect(path)
        try:
            migrate(self.conn, str(path))
        except DatabaseError as exc:
            self.conn.close()
            readable = index_error(exc, path)
            if readable is None:
                raise
            raise readable from None
        # Values derived from the data that are costly to recompute, each kept with the
        # data_state() it was computed at (see VectorIndex.pending_count).
        self.derived: dict[str, tuple[Any, Any]] = {}
        self.fts = FtsBatch(self.conn)  # chunks_fts's rows and term counts, written at commit
        self._changes_at_begin = 0  # total_changes as the open transaction began (mark_updated)

    def data_state(self) -> tuple[int, int]:
        """Changes when the data may have: PRAGMA data_version moves on other connections'
        commits, total_changes on this connection's writes."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0]), int(self.conn.total_changes)

    def close(self) -> None:
        self.conn.close()

    def meta_value(self, key: str) -> str | None:
        """A `meta` row's value (the vector models' fingerprints and shapes), None when unset."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction: everything inside lands together or not at all."""
        with refused_to_older_code(self.conn, self.path), write_transaction(self.conn, self.path):
            self._changes_at_begin = self.conn.total_changes
            try:
                yield
                self.fts.flush()
            except BaseException:
                self.fts.discard()
                raise

    def _flush_outside_a_transaction(self) -> None:
        """A write outside transaction() lands at once, its FTS rows and term counts with it."""
        if not self.conn.in_transaction:
            self.fts.flush()

    # -- collections ---------------------------------------------------------------------------

    def ensure_collection(self, name: str, root: Path) -> int:
        row = self.conn.execute("SELECT id, root FROM collections WHERE name = ?", (name,)).fetchone()
        if row:
            if row[1] != str(root):
                self.conn.execute("UPDATE collections SET root = ? WHERE id = ?", (str(root), row[0]))
            return int(row[0])
        cur = self.conn.execute("INSERT INTO collections (name, root) VALUES (?, ?)", (name, str(root)))
        return int(cur.lastrowid)

    def collection_id(self, name: str) -> int | None:
        row = self.conn.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else None

    def remove_collection(self, name: str) -> None:
        collection_id = self.collection_id(name)
        if collection_id is None:
            return
        chunk_ids = [int(r[0]) for r in self.conn.execute(
            "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.collection_id = ?",
            (collection_id,),
        )]
        self.fts.delete(collection_id, chunk_ids, count=False)
        forget_vectors_of(self.conn, chunk_ids)
        self.fts.flush()  # counts staged for it before are written now, and dropped below
        self.conn.execute("DELETE FROM term_stats WHERE collection_id = ?", (collection_id,))
        self.conn.execute("DELETE FROM collections WHERE name = ?", (name,))
        # its chunks' deep vectors were kept as they went (store/kept_vectors.py); a removed
        # collection is one the user asked to forget (docs/security.md)
        self.conn.execute("DELETE FROM kept_vectors WHERE collection_id = ?", (collection_id,))

    def mark_updated(self, collection_id: int, index_format: str) -> None:
        """The collection's update is done. When it wrote anything, FTS5's segments get one
        bounded merge step (merge_step): an update with nothing changed pays nothing, and none
        pays a whole merge."""
        self.fts.flush()  # this update's rows are in FTS5 before the merge step
        wrote = self.conn.total_changes != self._changes_at_begin
        self.conn.execute(
            "UPDATE collections SET updated_at = ?, index_format = ? WHERE id = ?",
            (time.time(), index_format, collection_id),
        )
        if wrote:
            self.merge_step()

    def merge_step(self) -> bool:
        """One step of merging FTS5's segments, about FTS_MERGE_PAGES leaf pages written at most:
        same rows and scores, fewer segments for a MATCH to read. A merge under way goes on
        ('merge', +N merges only a merge begun, or a level of 'usermerge' segments); with none
        under way and MAX_FTS_SEGMENTS or more segments, a merge of them all begins ('merge', -N
        first puts every segment on one level, so it is never asked while a merge is under way:
        that one would begin again from its first page). True when it wrote anything
        (total_changes moved by 2 or more, FTS5's documented sign of work): more may be left."""
        if self._fts_merge(FTS_MERGE_PAGES):
            return True
        return self.fts_segments() >= MAX_FTS_SEGMENTS and self._fts_merge(-FTS_MERGE_PAGES)

    def _fts_merge(self, pages: int) -> bool:
        before = self.conn.total_changes
        self.conn.execute("INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('merge', ?)", (pages,))
        return self.conn.total_changes - before >= 2

    def fts_segments(self) -> int:
        """The segments of the FTS5 index (each MATCH looks every term up in each)."""
        row = self.conn.execute("SELECT count(*) FROM (SELECT DISTINCT segid FROM chunks_fts_idx)").fetchone()
        return int(row[0])

    def index_format(self, collection_id: int) -> str:
        row = self.conn.execute(
            "SELECT index_format FROM collections WHERE id = ?", (collection_id,)
        ).fetchone()
        return row[0] if row else ""

    def collection_stats(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            """SELECT col.name, col.root, col.updated_at,
                      (SELECT count(*) FROM files f WHERE f.collection_id = col.id),
                      (SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id
                        WHERE f.collection_id = col.id),
                      col.index_format
               FROM collections col ORDER BY col.name"""
        ).fetchall()
        keys = ("name", "root", "updated_at", "files", "chunks", "index_format")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    # -- files ---------------------------------------------------------------------------------

    def file_states(self, collection_id: int) -> dict[str, FileState]:
        rows = self.conn.execute(
            "SELECT path, id, size, mtime_ns, hash FROM files WHERE collection_id = ?", (collection_id,)
        )
        return {r[0]: FileState._make(r[1:]) for r in rows}

    def touch_file(self, file_id: int, size: int, mtime_ns: int) -> None:
        self.conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, file_id))

    def delete_files(self, file_ids: Iterable[int]) -> None:
        ids = list(file_ids)
        for file_id in ids:
            rows = self.conn.execute(
                "SELECT f.collection_id, c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.id = ?",
                (file_id,),
            ).fetchall()
            if rows:
                self.fts.delete(int(rows[0][0]), [int(r[1]) for r in rows])
        self.conn.executemany("DELETE FROM files WHERE id = ?", [(i,) for i in ids])
        self._flush_outside_a_transaction()

    def write_file(
        self,
        collection_id: int,
        path: str,
        *,
        size: int,
        mtime_ns: int,
        content_hash: str,
        language: str | None,
        kind: str,
        line_count: int,
        chunks: list[Chunk],
        rederive: bool = False,
    ) -> tuple[int, int]:
        """Store a new or changed file; only chunks whose content changed are rewritten.

        `rederive` (the index format changed): a kept chunk also gets what is derived from it
        anew (symbols, signature, heading, definitions, its FTS row), keeping its id and vector;
        otherwise a new chunker or tokenizer rule would reach only the chunks whose text changed.
        The vector is kept even when a new chunker gives the chunk another heading or signature
        (part of what is embedded): the same trade as copying vectors between identical texts.
        A kept chunk whose heading, signature or symbols changed (lines of a function that was
        renamed) gets them and its FTS row anew too. Returns (chunks added, chunks removed).
        """
        row = self.conn.execute(
            "SELECT id FROM files WHERE collection_id = ? AND path = ?", (collection_id, path)
        ).fetchone()
        if row is None:
            cur = self.conn.execute(
                """INSERT INTO files (collection_id, path, size, mtime_ns, hash, language, kind, line_count)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
                (collection_id, path, size, mtime_ns, content_hash, language, kind, line_count),
            )
            file_id = int(cur.lastrowid)
            file_stems.add_file(self.conn, file_id, path)
            existing: StoredChunks = {}
        else:
            file_id = int(row[0])
            self.conn.execute(
                """UPDATE files SET size = ?, mtime_ns = ?, hash = ?, language = ?, kind = ?, line_count = ?
                   WHERE id = ?""",
                (size, mtime_ns, content_hash, language, kind, line_count, file_id),
            )
            existing = {}
            for chunk_id, chunk_hash, *derived in self.conn.execute(
                "SELECT id, hash, symbols, signature, heading FROM chunks WHERE file_id = ? ORDER BY seq",
                (file_id,),
            ):
                existing.setdefault(chunk_hash, []).append((int(chunk_id), tuple(derived)))
        plan = plan_chunks(existing, chunks, rederive)
        self.fts.delete(collection_id, [chunk_id for chunk_id, _ in plan.rederived] + plan.stale)
        # Why every statement is skipped when it has no rows, and definitions go in once per file:
        # a first index writes thousands of files, and empty or one-chunk `executemany` calls were
        # a fifth of its SQLite time (bench/ingest.py, docs/scale.md).
        if plan.moved:
            self.conn.executemany(
                "UPDATE chunks SET seq = ?, start_line = ?, end_line = ? WHERE id = ?",
                [(seq, chunk.start_line, chunk.end_line, chunk_id) for seq, chunk_id, chunk in plan.moved],
            )
        definitions: list[tuple[int, str, str, int]] = []
        analysed_path = fts_path(path)
        for chunk_id, chunk in plan.rederived:
            self.conn.execute(
                "UPDATE chunks SET symbols = ?, signature = ?, heading = ? WHERE id = ?",
                (" ".join(chunk.symbols), chunk.signature, chunk.heading, chunk_id),
            )
            self.conn.execute("DELETE FROM definitions WHERE chunk_id = ?", (chunk_id,))
            definitions += self._stage_derived(chunk_id, collection_id, analysed_path, chunk)
        for seq, chunk in plan.fresh:
            chunk_id = self._insert_chunk(file_id, seq, chunk)
            definitions += self._stage_derived(chunk_id, collection_id, analysed_path, chunk)
        if definitions:
            self.conn.executemany(
                "INSERT INTO definitions (chunk_id, name, kind, line) VALUES (?, ?, ?, ?)", definitions
            )
        if plan.stale:
            self.conn.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in plan.stale])
        self._flush_outside_a_transaction()
        return len(plan.fresh), len(plan.stale)

    def _insert_chunk(self, file_id: int, seq: int, chunk: Chunk) -> int:
        cur = self.conn.execute(
            """INSERT INTO chunks
                 (file_id, seq, start_line, end_line, text, symbols, signature, heading, hash)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                file_id,
                seq,
                chunk.start_line,
                chunk.end_line,
                chunk.text,
                " ".join(chunk.symbols),
                chunk.signature,
                chunk.heading,
                chunk.content_hash,
            ),
        )
        return int(cur.lastrowid)

    def _stage_derived(
        self, chunk_id: int, collection_id: int, analysed_path: str, chunk: Chunk
    ) -> list[tuple[int, str, str, int]]:
        """A chunk's FTS row (written at commit; `analysed_path` is its file's `fts_path`); its
        definitions' rows, for the caller to write."""
        row = (fts_collection_token(collection_id), analysed_path, fts_symbols(chunk), fts_body(chunk))
        self.fts.insert(collection_id, chunk_id, row)
        return [(chunk_id, d.name, d.kind, d.line) for d in chunk.definitions]

    def chunk_count(self, collection_id: int) -> int:
        return int(
            self.conn.execute(
                "SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.collection_id = ?",
                (collection_id,),
            ).fetchone()[0]
        )

    def chunks_in(self, collection_ids: list[int]) -> int:
        """Chunks of the collections. All of them: FTS5's own row total (every chunk has one FTS
        row), one page read, instead of a count of the chunks table (4 ms at 503k chunks, 180 ms
        with the index out of the page cache) or one joined count per collection (32-38 ms for
        58), which a search pays after every write (lexical.chunks_in_scope keeps it until the
        data changes). Inside a write transaction FTS5's total can lag: counted there."""
        if self._scope(collection_ids) is None:
            if not self.conn.in_transaction:
                return fts_row_count(self.conn, "chunks_fts")
            return int(self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
        return sum(self.chunk_count(i) for i in collection_ids)

    def indexed_paths(self, collection_id: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT path FROM files WHERE collection_id = ? ORDER BY path", (collection_id,)
        )
        return [r[0] for r in rows]

    def file_text(self, collection_id: int, path: str) -> str | None:
        """The file's indexed text, rebuilt from its chunks (overlaps removed, line numbers kept)."""
        rows = self.conn.execute(
            """SELECT c.start_line, c.text FROM chunks c JOIN files f ON f.id = c.file_id
               WHERE f.collection_id = ? AND f.path = ? ORDER BY c.seq""",
            (collection_id, path),
        ).fetchall()
        known = self.conn.execute(
            "SELECT line_count FROM files WHERE collection_id = ? AND path = ?", (collection_id, path)
        ).fetchone()
        if known is None:
            return None
        lines: dict[int, str] = {}
        for start, text in rows:
            for offset, line in enumerate(text.split("\n")):
                lines.setdefault(start + offset, line)
        # Lines no chunk holds (blank runs between and after chunks) come back empty, so line
        # numbers stay those of the file.
        total = max([int(known[0]), *lines]) if lines else 0
        return "\n".join(lines.get(n, "") for n in range(1, total + 1))

    # -- links ---------------------------------------------------------------------------------

    def replace_links(
        self, collection_id: int, links: list[tuple[int, int, str]], doc_chunk_ids: list[int] | None = None
    ) -> None:
        """The links of the collection's doc chunks, or of `doc_chunk_ids` only, become `links`."""
        if doc_chunk_ids is None:
            self.conn.execute(
                """DELETE FROM links WHERE doc_chunk_id IN (
                     SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.collection_id = ?)""",
                (collection_id,),
            )
        else:
            self.conn.executemany("DELETE FROM links WHERE doc_chunk_id = ?", [(i,) for i in doc_chunk_ids])
        self.conn.executemany(
            "INSERT OR IGNORE INTO links (doc_chunk_id, code_file_id, via) VALUES (?, ?, ?)", links
        )

    def links_of(self, collection_id: int) -> set[tuple[int, int, str]]:
        """Every (doc chunk id, code file id, cited text) of the collection."""
        rows = self.conn.execute(
            """SELECT l.doc_chunk_id, l.code_file_id, l.via FROM links l
               JOIN chunks c ON c.id = l.doc_chunk_id JOIN files f ON f.id = c.file_id
               WHERE f.collection_id = ?""",
            (collection_id,),
        )
        return {(int(a), int(b), str(v)) for a, b, v in rows}

    def doc_chunks(self, collection_id: int) -> list[tuple[int, str]]:
        return self.conn.execute(
            """SELECT c.id, c.text FROM chunks c JOIN files f ON f.id = c.file_id
               WHERE f.collection_id = ? AND f.kind = 'doc'""",
            (collection_id,),
        ).fetchall()

    def doc_chunks_of_files(self, collection_id: int, paths: list[str]) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        for batch in _batches(paths):
            marks = ",".join("?" * len(batch))
            out += self.conn.execute(
                f"""SELECT c.id, c.text FROM chunks c JOIN files f ON f.id = c.file_id
                    WHERE f.collection_id = ? AND f.kind = 'doc' AND f.path IN ({marks})""",
                [collection_id, *batch],
            ).fetchall()
        return out

    def doc_chunks_citing(self, collection_id: int, words: list[str]) -> list[tuple[int, str]]:
        """Doc chunks whose text holds any of `words` as whole FTS tokens (a file name: as a
        phrase). The FTS tokenizer lowercases and stems both sides, so this finds at least every
        chunk that holds the word exactly; callers filter further."""
        self.fts.flush()  # read inside an update: the rows it wrote first
        out: dict[int, str] = {}
        scope = f"collection : {fts_collection_token(collection_id)}"
        for batch in _batches(words):
            phrases = " OR ".join(quote(w) for w in batch)
            rows = self.conn.execute(
                """SELECT c.id, c.text FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
                   JOIN files f ON f.id = c.file_id
                   WHERE chunks_fts MATCH ? AND f.kind = 'doc'""",
                (f"{scope} AND body : ({phrases})",),
            )
            out.update((int(i), t) for i, t in rows)
        return list(out.items())

    def code_files(self, collection_id: int) -> dict[str, int]:
        rows = self.conn.execute(
            "SELECT path, id FROM files WHERE collection_id = ? AND kind = 'code'", (collection_id,)
        )
        return {r[0]: int(r[1]) for r in rows}

    def defined_names(self, collection_id: int, path: str) -> set[str]:
        """The names a file's chunks define."""
        rows = self.conn.execute(
            """SELECT DISTINCT d.name FROM definitions d JOIN chunks c ON c.id = d.chunk_id
               JOIN files f ON f.id = c.file_id WHERE f.collection_id = ? AND f.path = ?""",
            (collection_id, path),
        )
        return {r[0] for r in rows}

    def definition_files(self, collection_id: int, names: set[str] | None = None) -> dict[str, set[int]]:
        """Name -> the code files defining it: every name, or those of `names` (exact case)."""
        query = """SELECT d.name, c.file_id FROM definitions d JOIN chunks c ON c.id = d.chunk_id
                   JOIN files f ON f.id = c.file_id WHERE f.collection_id = ? AND f.kind = 'code'"""
        if names is None:
            rows = self.conn.execute(query, (collection_id,)).fetchall()
        else:
            rows = []
            for batch in _batches(sorted(names)):
                marks = ",".join("?" * len(batch))
                rows += self.conn.execute(
                    f"{query} AND d.name COLLATE NOCASE IN ({marks})", [collection_id, *batch]
                ).fetchall()
        out: dict[str, set[int]] = {}
        for name, file_id in rows:
            if names is None or name in names:
                out.setdefault(name, set()).add(int(file_id))
        return out

    def related_paths(self, file_ids: list[int]) -> dict[int, list[str]]:
        """For each file: the code files its doc chunks cite, or the docs that cite it, in path
        order."""
        if not file_ids:
            return {}
        marks = ",".join("?" * len(file_ids))
        out: dict[int, list[str]] = {}
        # A code file can be cited by thousands of doc chunks (django's models/base.py: ~1,000 in
        # each copy): their files are made distinct before their paths are read. UNION leaves each
        # (file, path) once.
        rows = self.conn.execute(
            f"""SELECT c.file_id, f.path FROM links l JOIN chunks c ON c.id = l.doc_chunk_id
                JOIN files f ON f.id = l.code_file_id WHERE c.file_id IN ({marks})
                UNION
                SELECT cited.code_file_id, df.path FROM (
                    SELECT DISTINCT l.code_file_id, c.file_id AS doc_file_id FROM links l
                    JOIN chunks c ON c.id = l.doc_chunk_id WHERE l.code_file_id IN ({marks})
                ) cited JOIN files df ON df.id = cited.doc_file_id
                ORDER BY 1, 2""",
            [*file_ids, *file_ids],
        )
        for file_id, path in rows:
            out.setdefault(int(file_id), []).append(path)
        return out

    # -- reads for search ----------------------------------------------------------------------

    def fts_search(
        self,
        query: LexicalQuery,
        collection_ids: list[int],
        limit: int,
        weights: tuple[float, float, float],
        file_ids: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk id, bm25) best first; bm25 is negated so that larger is better. `weights`: the
        path, symbols and body columns' (FTS5's bm25 arguments). `file_ids`: only those files'
        chunks (_fts_search_among)."""
        match = scoped_match(query, self._scope(collection_ids))
        with rejected_queries():
            if file_ids is not None:
                return self._fts_search_among(match, collection_ids, limit, weights, file_ids)
            rows = self.conn.execute(
                """SELECT rowid, bm25(chunks_fts, 0.0, ?, ?, ?) AS score FROM chunks_fts
                   WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?""",
                (*weights, match, limit),
            ).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def _fts_search_among(
        self, match: str, collection_ids: list[int], limit: int, weights: tuple[float, float, float],
        file_ids: Collection[int],
    ) -> list[tuple[int, float]]:
        """The MATCH's best chunks of FILE_IDS (a set). Their chunk ids are a probe each match
        passes before it is scored: a folder's 124 files, 5 ms where the unfiltered pass took 30
        (a question's any-term pass, 32k matches at 309k chunks); their build grows with the
        files, so where the files are a large share of the scope's (an exclusion: `!tests/`) the
        unfiltered best are asked for as many more as the share is small and only their files
        looked up: the same answer when `limit` of them are of the files (or they are every
        match), else the probe runs."""
        in_scope = self._files_in(collection_ids)
        if file_ids and len(file_ids) >= AMONG_SHARE * in_scope:
            wanted = math.ceil(limit * in_scope / len(file_ids) * AMONG_MARGIN)
            best = self.conn.execute(
                """SELECT rowid, bm25(chunks_fts, 0.0, ?, ?, ?) AS score FROM chunks_fts
                   WHERE chunks_fts MATCH ? ORDER BY score LIMIT ?""",
                (*weights, match, wanted),
            ).fetchall()
            file_of = dict(self.conn.execute(
                "SELECT c.id, c.file_id FROM json_each(?) j CROSS JOIN chunks c ON c.id = j.value",
                (json.dumps([r[0] for r in best]),),
            ).fetchall())
            kept = [(int(r[0]), -float(r[1])) for r in best if file_of.get(r[0]) in file_ids]
            if len(kept) >= limit or len(best) < wanted:
                return kept[:limit]
        # `+rowid`: not offered to FTS5 as a rowid lookup; the MATCH drives, each match probed in
        # the files' chunk ids (read from chunks_by_file alone), and only those scored
        rows = self.conn.execute(
            """SELECT rowid, bm25(chunks_fts, 0.0, ?, ?, ?) AS score FROM chunks_fts
               WHERE chunks_fts MATCH ? AND +rowid IN (
                   SELECT c.id FROM json_each(?) j CROSS JOIN chunks c ON c.file_id = j.value)
               ORDER BY score LIMIT ?""",
            (*weights, match, json.dumps(list(file_ids)), limit),
        ).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def fts_count(self, query: LexicalQuery, collection_ids: list[int]) -> int:
        """How many chunks of the collections match (a term's document frequency). A word that is
        one token is looked up in term_stats: FTS5 would read its whole posting list."""
        scope = self._scope(collection_ids)
        if isinstance(query, Word) and len(tokens := query_tokens(query.text)) == 1:
            return term_stats.counts(self.conn, {tokens[0]}, scope)[tokens[0]]
        return self._match_count(query, scope)

    def _match_count(self, query: LexicalQuery, scope: list[int] | None) -> int:
        with rejected_queries():
            row = self.conn.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (scoped_match(query, scope),)
            ).fetchone()
        return int(row[0])

    def word_counts(self, words: list[str], collection_ids: list[int]) -> dict[str, int]:
        """fts_count of each word's Word, the words that are one token each read from term_stats
        in one statement (a question's feedback words: 60 counts, ~0.2 ms each one at a time); a
        word the MATCH syntax rejects counts 0."""
        scope = self._scope(collection_ids)
        tokens = query_tokens_of(words)
        single = {word: found[0] for word, found in tokens.items() if len(found) == 1}
        by_token = term_stats.counts(self.conn, set(single.values()), scope)
        counted: dict[str, int] = {}
        for word in tokens:
            if word in single:
                counted[word] = by_token[single[word]]
                continue
            try:
                counted[word] = self._match_count(Word(word), scope)
            except QueryRejected:
                counted[word] = 0
        return counted

    def _files_in(self, collection_ids: list[int]) -> int:
        """Files of the collections, kept until the data changes (each filtered MATCH asks)."""
        key = (self.data_state(), tuple(sorted(collection_ids)))
        kept = self.derived.get("files_in_scope")
        if kept is None or kept[0] != key:
            marks = ",".join("?" * len(collection_ids))
            sql = f"SELECT count(*) FROM files WHERE collection_id IN ({marks})"
            kept = (key, int(self.conn.execute(sql, collection_ids).fetchone()[0]))
            self.derived["files_in_scope"] = kept
        return int(kept[1])

    def _scope(self, collection_ids: list[int]) -> list[int] | None:
        """The collections a MATCH must be limited to; None when they are all the index holds: the
        filter ORs every collection's token, a walk over an entry of every chunk (at 255k chunks
        ~5 ms a term counted, more than the term itself), to keep every row anyway."""
        every = {int(r[0]) for r in self.conn.execute("SELECT id FROM collections")}
        return None if every <= set(collection_ids) else collection_ids

    def chunks_by_ids(self, chunk_ids: list[int]) -> dict[int, ChunkRow]:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.conn.execute(f"{_CHUNK_SELECT} WHERE c.id IN ({marks})", chunk_ids)
        return {int(r[0]): ChunkRow(*r) for r in rows}

    def chunks_defining(self, names: list[str], collection_ids: list[int]) -> list[tuple[int, str, str]]:
        """(chunk id, name, kind) for chunks that define any of names (case-insensitive). Over
        every collection without the filter's joins: a bug report's names (`__init__`, `get`) have
        2k definitions at 500k chunks, and the joins tripled the cost of reading them."""
        if not names or not collection_ids:
            return []
        name_marks = ",".join("?" * len(names))
        scope = self._scope(collection_ids)
        if scope is None:
            sql = f"""SELECT chunk_id, name, kind FROM definitions d
                      WHERE name COLLATE NOCASE IN ({name_marks}) ORDER BY {_DEFINITION_ORDER}"""
            return self.conn.execute(sql, names).fetchall()
        col_marks = ",".join("?" * len(scope))
        return self.conn.execute(
            f"""SELECT d.chunk_id, d.name, d.kind FROM definitions d JOIN chunks c ON c.id = d.chunk_id
                JOIN files f ON f.id = c.file_id
                WHERE d.name COLLATE NOCASE IN ({name_marks}) AND f.collection_id IN ({col_marks})
                ORDER BY {_DEFINITION_ORDER}""",
            [*names, *scope],
        ).fetchall()

    def definition_counts(self, names: list[str], collection_ids: list[int]) -> dict[str, int]:
        """Name as defined -> chunks of the collections defining it (any case of one of names)."""
        if not names or not collection_ids:
            return {}
        name_marks = ",".join("?" * len(names))
        scope = self._scope(collection_ids)
        if scope is None:
            sql = f"""SELECT name, count(DISTINCT chunk_id) FROM definitions
                      WHERE name COLLATE NOCASE IN ({name_marks}) GROUP BY name"""
            return {str(n): int(k) for n, k in self.conn.execute(sql, names)}
        col_marks = ",".join("?" * len(scope))
        rows = self.conn.execute(
            f"""SELECT d.name, count(DISTINCT d.chunk_id) FROM definitions d
                JOIN chunks c ON c.id = d.chunk_id JOIN files f ON f.id = c.file_id
                WHERE d.name COLLATE NOCASE IN ({name_marks}) AND f.collection_id IN ({col_marks})
                GROUP BY d.name""",
            [*names, *scope],
        )
        return {str(n): int(k) for n, k in rows}

    def definitions_in(self, chunk_ids: list[int]) -> dict[int, list[tuple[str, int]]]:
        """Chunk id -> (name, line) of each definition the chunk holds, in line order."""
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        out: dict[int, list[tuple[str, int]]] = {}
        for chunk_id, name, line in self.conn.execute(
            f"SELECT chunk_id, name, line FROM definitions d WHERE chunk_id IN ({marks})"
            f" ORDER BY {_DEFINITION_ORDER}",
            chunk_ids,
        ):
            out.setdefault(int(chunk_id), []).append((name, int(line)))
        return out

    def signature_outline(self, file_ids: list[int]) -> dict[int, list[tuple[int, str]]]:
        """File id -> (chunk id, signature) of each chunk, in line order: the windows of one long
        definition follow each other, each after the first opening with its signature."""
        if not file_ids:
            return {}
        marks = ",".join("?" * len(file_ids))
        out: dict[int, list[tuple[int, str]]] = {}
        for chunk_id, file_id, signature in self.conn.execute(
            f"""SELECT id, file_id, signature FROM chunks WHERE file_id IN ({marks})
                ORDER BY file_id, start_line, id""",
            file_ids,
        ):
            out.setdefault(int(file_id), []).append((int(chunk_id), signature))
        return out

    def chunks_matching(self, query: LexicalQuery, chunk_ids: list[int]) -> set[int]:
        """The chunks among chunk_ids that match the query, one MATCH per range of neighbouring
        ids (`id_ranges`). `rowid IN (...)` ran the MATCH once per id (~30 us each), and reading
        a common word's whole posting list cost more: 5.2 -> 1.1 ms a question at 503k chunks."""
        wanted = set(chunk_ids)
        found: set[int] = set()
        with rejected_queries():
            for first, last in id_ranges(chunk_ids, MATCH_RANGE_GAP):
                rows = self.conn.execute(
                    "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ?",
                    (match_expression(query), first, last),
                )
                found.update(int(r[0]) for r in rows if r[0] in wanted)
        return found

    def last_lines(self, file_ids: list[int]) -> dict[int, int]:
        """File id -> the last line any of its chunks covers."""
        if not file_ids:
            return {}
        marks = ",".join("?" * len(file_ids))
        rows = self.conn.execute(
            f"SELECT file_id, max(end_line) FROM chunks WHERE file_id IN ({marks}) GROUP BY file_id", file_ids
        )
        return {int(file_id): int(last) for file_id, last in rows}

    def chunks_of_files_named(self, stems: list[str], collection_ids: list[int]) -> list[int]:
        """First chunks of the first 50 files (by id) whose stem is one of stems (any case;
        store/file_stems.py): such files are candidates by name."""
        if not stems or not collection_ids:
            return []
        col_marks = ",".join("?" * len(collection_ids))
        stem_marks = ",".join("?" * len(stems))
        rows = self.conn.execute(
            f"""SELECT min(c.id) FROM file_stems s JOIN files f ON f.id = s.file_id
                JOIN chunks c ON c.file_id = f.id
                WHERE s.stem IN ({stem_marks}) AND f.collection_id IN ({col_marks})
                GROUP BY f.id ORDER BY f.id LIMIT 50""",
            [*(s.lower() for s in stems), *collection_ids],
        )
        return [int(r[0]) for r in rows]

    def file_paths(self, collection_ids: list[int]) -> list[tuple[int, str]]:
        if not collection_ids:
            return []
        marks = ",".join("?" * len(collection_ids))
        sql = f"SELECT id, path FROM files WHERE collection_id IN ({marks})"
        rows = self.conn.execute(sql, collection_ids)
        return [(int(file_id), path) for file_id, path in rows]

    def chunks_of_files(self, file_ids: list[int], limit: int) -> list[int]:
        rows = self.conn.execute(
            "SELECT c.id FROM json_each(?) j CROSS JOIN chunks c ON c.file_id = j.value LIMIT ?",
            (json.dumps(file_ids), limit),
        )
        return [int(r[0]) for r in rows]

    def language_counts(self, collection_ids: list[int], limit: int = 8) -> list[tuple[str, int]]:
        """(language, files) of the collections, most files first."""
        if not collection_ids:
            return []
        marks = ",".join("?" * len(collection_ids))
        rows = self.conn.execute(
            f"""SELECT language, count(*) FROM files WHERE collection_id IN ({marks}) AND language IS NOT NULL
                GROUP BY language ORDER BY count(*) DESC LIMIT ?""",
            [*collection_ids, limit],
        )
        return [(str(language), int(count)) for language, count in rows]

    def manifest_texts(self, collection_ids: list[int], names: Sequence[str]) -> list[str]:
        """The chunk texts of files named one of `names` (at the root or in any folder)."""
        if not collection_ids or not names:
            return []
        marks = ",".join("?" * len(collection_ids))
        clauses = " OR ".join("(f.path = ? OR f.path LIKE ?)" for _ in names)
        params: list[Any] = [*collection_ids]
        for name in names:
            params += [name, f"%/{name}"]
        rows = self.conn.execute(
            f"""SELECT c.text FROM chunks c JOIN files f ON f.id = c.file_id
                WHERE f.collection_id IN ({marks}) AND ({clauses})""",
            params,
        )
        return [str(text) for (text,) in rows]
