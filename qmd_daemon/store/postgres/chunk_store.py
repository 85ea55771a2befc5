"""PostgresChunkStore: IndexStore's methods (store/index_store.py) over a PostgreSQL database, so a
team shares one index. Same return types and skip rules; writes of one collection take turns across
machines on a transaction-scoped advisory lock, and `UNIQUE (collection_id, path)` keeps a file
once."""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg

from qmd_daemon.errors import IndexDatabaseError, QueryRejected
from qmd_daemon.store.chunk_plan import StoredChunks, plan_chunks
from qmd_daemon.store.fts_tokens import index_tokens
from qmd_daemon.store.lexical_query import AnyOf, LexicalQuery, Phrase, Word
from qmd_daemon.store.postgres import lexical, ranking
from qmd_daemon.store.postgres.connection import PostgresDatabase
from qmd_daemon.store.postgres.schema import migrate
from qmd_daemon.store.protocols import ChunkRow, FileState
from qmd_daemon.text.analysis import fts_body, fts_path, fts_symbols
from qmd_daemon.text.chunk_model import Chunk

_CHUNK_SELECT = """
    SELECT c.id, c.file_id, col.name, f.path, f.kind, f.language, c.start_line, c.end_line,
           c.text, c.symbols, c.signature, c.heading, c.hash
    FROM chunks c JOIN files f ON f.id = c.file_id JOIN collections col ON col.id = f.collection_id
"""
_COLLECTION_LOCK = 0x716D63  # pg_advisory_xact_lock(this, hashtext(collection name))


def analysed(path: str, chunk: Chunk) -> tuple[str, int]:
    """The chunk's tsvector literal and its length in tokens as FTS5 counts a row (path, symbols,
    body, and the one token of its collection column)."""
    positions: dict[str, list[str]] = defaultdict(list)
    position = 0
    for label, text in zip(lexical.COLUMN_LABELS, (fts_path(path), fts_symbols(chunk), fts_body(chunk)),
                           strict=True):
        for token in index_tokens(text):
            position += 1
            positions[token].append(f"{min(position, 16383)}{label}")
    literal = " ".join(f"'{t}':{','.join(p)}" for t, p in positions.items())
    return literal, position + 1


def lock_collection(db: PostgresDatabase, name: str) -> None:
    """Writers of collection NAME (updates, removal, migrate) take turns across machines until the
    transaction ends."""
    db.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_COLLECTION_LOCK, name))


def list_home(db: PostgresDatabase, home: tuple[str, str], where: str, params: Sequence[Any]) -> None:
    """Home (id, label) lists the collections `WHERE` selects, now (collection_homes, homes.py):
    an update's own collection, or a home's whole index.yml when it renews."""
    db.execute(
        f"""INSERT INTO collection_homes (collection_id, home_id, label, seen_at)
            SELECT id, %s, %s, extract(epoch FROM now()) FROM collections WHERE {where}
            ON CONFLICT (collection_id, home_id)
            DO UPDATE SET label = excluded.label, seen_at = excluded.seen_at""",
        (*home, *params),
    )


class PostgresChunkStore:
    """The ChunkStore protocol over a PostgreSQL database (store/protocols.py)."""

    supports_vectors = True  # pgvector on the same database; open_backend sets False where it is not enabled

    def __init__(self, db: PostgresDatabase, home: tuple[str, str] | None = None):
        self.db = db
        self.home = home  # (id, label) of the home writing: an update lists its collection (homes.py)
        self.where = db.where
        migrate(db)
        self.derived = db.derived

    def _sql(self, query: str, params: Sequence[Any] | dict[str, Any] | None = None) -> psycopg.Cursor[Any]:
        """One statement (outside a transaction, rerun once on a new connection when the server
        dropped the old one: see connection.py)."""
        return self.db.execute(query, params)

    def _many(self, query: str, rows: list[Any]) -> None:
        self.db.executemany(query, rows)

    def _row(self, query: str, params: Sequence[Any] | None = None) -> tuple[Any, ...]:
        """The one row of an aggregate or RETURNING statement (always one)."""
        row = self._sql(query, params).fetchone()
        if row is None:
            raise IndexDatabaseError(f"the index database ({self.where}) answered no row: {query.split()[0]}")
        return tuple(row)

    def _scalar(self, query: str, params: Sequence[Any] | None = None) -> Any:
        return self._row(query, params)[0]

    def data_state(self) -> tuple[int, int]:
        return self.db.data_state()

    def close(self) -> None:
        self.db.close()

    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction; a connection lost earlier (server restart, terminated backend) is
        opened anew first, so the retry of a failed update just works."""
        return self.db.transaction()

    def _lock_collection(self, name: str) -> None:
        if self.db.in_transaction:
            lock_collection(self.db, name)

    # -- collections ---------------------------------------------------------------------------

    def ensure_collection(self, name: str, root: Any) -> int:
        self._lock_collection(name)
        row = self._sql("SELECT id, root FROM collections WHERE name = %s", (name,)).fetchone()
        if row:
            if row[1] != str(root):
                self._sql("UPDATE collections SET root = %s WHERE id = %s", (str(root), row[0]))
            collection_id = int(row[0])
        else:
            collection_id = int(self._scalar(
                "INSERT INTO collections (name, root) VALUES (%s, %s) RETURNING id", (name, str(root))
            ))
        if self.home is not None:  # in the update's transaction: a remove elsewhere sees it listed
            list_home(self.db, self.home, "id = %s", (collection_id,))
        return collection_id

    def collection_id(self, name: str) -> int | None:
        row = self._sql("SELECT id FROM collections WHERE name = %s", (name,)).fetchone()
        return int(row[0]) if row else None

    def remove_collection(self, name: str) -> None:
        self._lock_collection(name)
        # its vectors go before its chunks, so the keep trigger keeps none only to drop them below
        if self._scalar("SELECT to_regclass('chunk_vectors') IS NOT NULL"):
            self._sql("DELETE FROM chunk_vectors WHERE collection_id = "
                      "(SELECT id FROM collections WHERE name = %s)", (name,))
        row = self._sql("DELETE FROM collections WHERE name = %s RETURNING id", (name,)).fetchone()
        if row:
            self._sql("DELETE FROM term_stats WHERE collection_id = %s", (row[0],))
            self._sql("DELETE FROM collection_totals WHERE collection_id = %s", (row[0],))
            # its chunks' vectors were kept as they went; a removed collection is forgotten
            self._sql("DELETE FROM kept_vectors WHERE collection_id = %s", (row[0],))

    def mark_updated(self, collection_id: int, index_format: str) -> None:
        self._sql("UPDATE collections SET updated_at = %s, index_format = %s WHERE id = %s",
                  (time.time(), index_format, collection_id))

    def merge_step(self) -> bool:
        """Nothing to merge: PostgreSQL keeps its indexes itself (autovacuum)."""
        return False

    def index_format(self, collection_id: int) -> str:
        row = self._sql("SELECT index_format FROM collections WHERE id = %s", (collection_id,)).fetchone()
        return row[0] if row else ""

    def collection_stats(self) -> list[dict[str, Any]]:
        rows = self._sql(
            """SELECT col.name, col.root, col.updated_at,
                      (SELECT count(*) FROM files f WHERE f.collection_id = col.id),
                      (SELECT count(*) FROM chunks c WHERE c.collection_id = col.id),
                      col.index_format
               FROM collections col ORDER BY col.name"""
        ).fetchall()
        keys = ("name", "root", "updated_at", "files", "chunks", "index_format")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    # -- files ---------------------------------------------------------------------------------

    def file_states(self, collection_id: int) -> dict[str, FileState]:
        rows = self._sql("SELECT path, id, size, mtime_ns, hash FROM files WHERE collection_id = %s",
                         (collection_id,))
        return {r[0]: FileState(int(r[1]), int(r[2]), int(r[3]), r[4]) for r in rows}

    def touch_file(self, file_id: int, size: int, mtime_ns: int) -> None:
        self._sql("UPDATE files SET size = %s, mtime_ns = %s WHERE id = %s", (size, mtime_ns, file_id))

    def delete_files(self, file_ids: Iterable[int]) -> None:
        ids = list(file_ids)
        if ids:
            self._sql("DELETE FROM files WHERE id = ANY(%s)", (ids,))

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
        """IndexStore.write_file's rules: only chunks whose content changed are rewritten; a kept
        chunk whose symbols, signature or heading changed (or every kept chunk with `rederive`)
        gets them and its terms anew, keeping its id. Returns (chunks added, chunks removed)."""
        file_id = int(self._scalar(
            """INSERT INTO files (collection_id, path, size, mtime_ns, hash, language, kind, line_count)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (collection_id, path) DO UPDATE SET size = excluded.size,
                 mtime_ns = excluded.mtime_ns, hash = excluded.hash, language = excluded.language,
                 kind = excluded.kind, line_count = excluded.line_count
               RETURNING id""",
            (collection_id, path, size, mtime_ns, content_hash, language, kind, line_count),
        ))
        existing: StoredChunks = {}
        for chunk_id, chunk_hash, *derived in self._sql(
            "SELECT id, hash, symbols, signature, heading FROM chunks WHERE file_id = %s ORDER BY seq",
            (file_id,),
        ):
            existing.setdefault(chunk_hash, []).append((int(chunk_id), tuple(derived)))
        plan = plan_chunks(existing, chunks, rederive)
        for chunk_id, chunk in plan.rederived:
            fts, tokens = analysed(path, chunk)
            self._sql(
                """UPDATE chunks SET symbols = %s, signature = %s, heading = %s, fts = %s::tsvector,
                   token_count = %s WHERE id = %s""",
                (" ".join(chunk.symbols), chunk.signature, chunk.heading, fts, tokens, chunk_id),
            )
            self._sql("DELETE FROM definitions WHERE chunk_id = %s", (chunk_id,))
            self._write_definitions([(chunk_id, chunk)])
        self._many(
            "UPDATE chunks SET seq = %s, start_line = %s, end_line = %s WHERE id = %s",
            [(seq, chunk.start_line, chunk.end_line, chunk_id) for seq, chunk_id, chunk in plan.moved],
        )
        if plan.stale:
            self._sql("DELETE FROM chunks WHERE id = ANY(%s)", (plan.stale,))
        if plan.fresh:
            self._insert_chunks(collection_id, file_id, path, plan.fresh)
        return len(plan.fresh), len(plan.stale)

    def _insert_chunks(
        self, collection_id: int, file_id: int, path: str, fresh: list[tuple[int, Chunk]]
    ) -> None:
        """One INSERT for the file's new chunks: the term statistics trigger runs once per statement."""
        values: list[Any] = []
        for seq, chunk in fresh:
            fts, tokens = analysed(path, chunk)
            values += [file_id, collection_id, seq, chunk.start_line, chunk.end_line, chunk.text,
                       " ".join(chunk.symbols), chunk.signature, chunk.heading, chunk.content_hash, fts,
                       tokens]
        marks = ",".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector, %s)"] * len(fresh))
        rows = self._sql(
            f"""INSERT INTO chunks (file_id, collection_id, seq, start_line, end_line, text, symbols,
                                   signature, heading, hash, fts, token_count)
                VALUES {marks} RETURNING id, seq""",
            values,
        ).fetchall()
        by_seq = {seq: chunk for seq, chunk in fresh}
        self._write_definitions([(int(chunk_id), by_seq[seq]) for chunk_id, seq in rows])

    def _write_definitions(self, chunks: list[tuple[int, Chunk]]) -> None:
        rows = [(chunk_id, d.name, d.kind, d.line) for chunk_id, chunk in chunks for d in chunk.definitions]
        self._many("INSERT INTO definitions (chunk_id, name, kind, line) VALUES (%s, %s, %s, %s)", rows)

    def chunk_count(self, collection_id: int) -> int:
        return int(self._scalar("SELECT count(*) FROM chunks WHERE collection_id = %s", (collection_id,)))

    def chunks_in(self, collection_ids: list[int]) -> int:
        return sum(self.chunk_count(i) for i in collection_ids)

    def indexed_paths(self, collection_id: int) -> list[str]:
        rows = self._sql("SELECT path FROM files WHERE collection_id = %s ORDER BY path COLLATE \"C\"",
                         (collection_id,))
        return [r[0] for r in rows]

    def file_text(self, collection_id: int, path: str) -> str | None:
        """The file's indexed text, rebuilt from its chunks (overlaps removed, line numbers kept)."""
        known = self._sql("SELECT id, line_count FROM files WHERE collection_id = %s AND path = %s",
                          (collection_id, path)).fetchone()
        if known is None:
            return None
        lines: dict[int, str] = {}
        for start, text in self._sql("SELECT start_line, text FROM chunks WHERE file_id = %s ORDER BY seq",
                                     (known[0],)):
            for offset, line in enumerate(text.split("\n")):
                lines.setdefault(start + offset, line)
        total = max([int(known[1]), *lines]) if lines else 0
        return "\n".join(lines.get(n, "") for n in range(1, total + 1))

    # -- links ---------------------------------------------------------------------------------

    def replace_links(
        self, collection_id: int, links: list[tuple[int, int, str]], doc_chunk_ids: list[int] | None = None
    ) -> None:
        if doc_chunk_ids is None:
            self._sql("""DELETE FROM links WHERE doc_chunk_id IN (
                           SELECT id FROM chunks WHERE collection_id = %s)""", (collection_id,))
        elif doc_chunk_ids:
            self._sql("DELETE FROM links WHERE doc_chunk_id = ANY(%s)", (list(doc_chunk_ids),))
        self._many("""INSERT INTO links (doc_chunk_id, code_file_id, via) VALUES (%s, %s, %s)
                      ON CONFLICT DO NOTHING""", links)

    def links_of(self, collection_id: int) -> set[tuple[int, int, str]]:
        rows = self._sql("""SELECT l.doc_chunk_id, l.code_file_id, l.via FROM links l
                            JOIN chunks c ON c.id = l.doc_chunk_id WHERE c.collection_id = %s""",
                         (collection_id,))
        return {(int(a), int(b), str(v)) for a, b, v in rows}

    def doc_chunks(self, collection_id: int) -> list[tuple[int, str]]:
        return [(int(i), t) for i, t in self._sql(
            """SELECT c.id, c.text FROM chunks c JOIN files f ON f.id = c.file_id
               WHERE c.collection_id = %s AND f.kind = 'doc'""", (collection_id,))]

    def doc_chunks_of_files(self, collection_id: int, paths: list[str]) -> list[tuple[int, str]]:
        return [(int(i), t) for i, t in self._sql(
            """SELECT c.id, c.text FROM chunks c JOIN files f ON f.id = c.file_id
               WHERE c.collection_id = %s AND f.kind = 'doc' AND f.path = ANY(%s)""", (collection_id, paths))]

    def doc_chunks_citing(self, collection_id: int, words: list[str]) -> list[tuple[int, str]]:
        """Doc chunks whose body holds any of `words` as whole tokens (a file name: as a phrase)."""
        if not words:
            return []
        node = lexical.compile_query(AnyOf(tuple(Phrase(w) for w in words)), column="C")
        rows = self._sql(
            """SELECT c.id, c.text FROM chunks c JOIN files f ON f.id = c.file_id
                WHERE c.collection_id = %s AND f.kind = 'doc' AND c.fts @@ %s::tsquery""",
            (collection_id, lexical.tsquery(node)),
        )
        return [(int(i), t) for i, t in rows]

    def code_files(self, collection_id: int) -> dict[str, int]:
        rows = self._sql("SELECT path, id FROM files WHERE collection_id = %s AND kind = 'code'",
                         (collection_id,))
        return {r[0]: int(r[1]) for r in rows}

    def defined_names(self, collection_id: int, path: str) -> set[str]:
        rows = self._sql(
            """SELECT DISTINCT d.name FROM definitions d JOIN chunks c ON c.id = d.chunk_id
               JOIN files f ON f.id = c.file_id WHERE f.collection_id = %s AND f.path = %s""",
            (collection_id, path),
        )
        return {r[0] for r in rows}

    def definition_files(self, collection_id: int, names: set[str] | None = None) -> dict[str, set[int]]:
        query = """SELECT d.name, c.file_id FROM definitions d JOIN chunks c ON c.id = d.chunk_id
                   JOIN files f ON f.id = c.file_id WHERE c.collection_id = %s AND f.kind = 'code'"""
        if names is None:
            rows = self._sql(query, (collection_id,)).fetchall()
        else:
            rows = self._sql(f"{query} AND lower(d.name) = ANY(%s)",
                             (collection_id, sorted({n.lower() for n in names}))).fetchall()
        out: dict[str, set[int]] = {}
        for name, file_id in rows:
            if names is None or name in names:
                out.setdefault(name, set()).add(int(file_id))
        return out

    def related_paths(self, file_ids: list[int]) -> dict[int, list[str]]:
        """Each file's related paths in path order (as bytes): a hit shows the first 5, and a
        hash UNION gave any 5."""
        if not file_ids:
            return {}
        out: dict[int, list[str]] = {}
        rows = self._sql(
            """SELECT c.file_id, f.path COLLATE "C" FROM links l JOIN chunks c ON c.id = l.doc_chunk_id
               JOIN files f ON f.id = l.code_file_id WHERE c.file_id = ANY(%s)
               UNION
               SELECT l.code_file_id, df.path FROM links l JOIN chunks c ON c.id = l.doc_chunk_id
               JOIN files df ON df.id = c.file_id WHERE l.code_file_id = ANY(%s)
               ORDER BY 1, 2""",
            (file_ids, file_ids),
        )
        for file_id, path in rows:
            bucket = out.setdefault(int(file_id), [])
            if path not in bucket:
                bucket.append(path)
        return out

    # -- reads for search ----------------------------------------------------------------------

    def _matching(self, node: lexical.Node, among: str, ids: list[int]) -> list[int]:
        """Ids of the chunks that match as FTS5 decides, among the chunks of collections `ids`
        (`among` "collection_id") or the chunks `ids` (`among` "id")."""
        if ranking.decided_by_tsquery(node):
            rows = self._sql(f"SELECT c.id FROM chunks c WHERE {ranking.SCOPES[among]} = ANY(%s)"
                             " AND c.fts @@ %s::tsquery", (ids, lexical.tsquery(node)))
        else:
            statement = ranking.matching(node, among, ids)
            rows = self._sql(statement.sql, statement.params)
        return [int(r[0]) for r in rows]

    def fts_search(
        self,
        query: LexicalQuery,
        collection_ids: list[int],
        limit: int,
        weights: tuple[float, float, float],
        file_ids: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk id, bm25) best first, bm25 as FTS5 computes it (larger is better), computed in
        the server: one statement, `limit` rows back; `file_ids`: only those files' chunks."""
        node = lexical.compile_query(query)
        if not collection_ids:
            return []
        files = None if file_ids is None else list(file_ids)
        check = ranking.any_candidate(node, collection_ids, files)
        if check is not None and self._sql(check.sql, check.params).fetchone() is None:
            return []
        statement = ranking.ranked(node, collection_ids, limit, weights, files)
        return [(int(i), float(score)) for i, score in self._sql(statement.sql, statement.params)]

    def fts_count(self, query: LexicalQuery, collection_ids: list[int]) -> int:
        """How many chunks of the collections match (a term's document frequency)."""
        node = lexical.compile_query(query)
        if not collection_ids:
            return 0
        if (lexeme := _one_lexeme(node)) is not None:  # its rows per collection are kept in term_stats
            return self._lexeme_counts({lexeme}, collection_ids)[lexeme]
        if ranking.decided_by_tsquery(node):  # PostgreSQL counts on its own
            return int(self._scalar(
                "SELECT count(*) FROM chunks WHERE collection_id = ANY(%s) AND fts @@ %s::tsquery",
                (collection_ids, lexical.tsquery(node)),
            ))
        return len(self._matching(node, "collection_id", collection_ids))

    def _lexeme_counts(self, lexemes: set[str], collection_ids: list[int]) -> dict[str, int]:
        found = dict.fromkeys(lexemes, 0)
        rows = self._sql("SELECT lexeme, sum(df) FROM term_stats WHERE lexeme = ANY(%s)"
                         " AND collection_id = ANY(%s) GROUP BY lexeme", (sorted(lexemes), collection_ids))
        found.update((str(lexeme), int(df)) for lexeme, df in rows)
        return found

    def word_counts(self, words: list[str], collection_ids: list[int]) -> dict[str, int]:
        """fts_count of each word's Word, the one-lexeme words read from term_stats in one statement."""
        nodes: dict[str, lexical.Node | None] = {}
        for word in words:
            try:
                nodes[word] = lexical.compile_query(Word(word))
            except QueryRejected:
                nodes[word] = None
        if not collection_ids:
            return dict.fromkeys(nodes, 0)
        single = {word: lexeme for word, node in nodes.items()
                  if node is not None and (lexeme := _one_lexeme(node)) is not None}
        by_lexeme = self._lexeme_counts(set(single.values()), collection_ids)
        counted: dict[str, int] = {}
        for word, node in nodes.items():
            if word in single:
                counted[word] = by_lexeme[single[word]]
                continue
            try:
                counted[word] = 0 if node is None else self.fts_count(Word(word), collection_ids)
            except QueryRejected:
                counted[word] = 0
        return counted

    def chunks_matching(self, query: LexicalQuery, chunk_ids: list[int]) -> set[int]:
        """The chunks among chunk_ids that match the query, as FTS5 decides."""
        if not chunk_ids:
            return set()
        return set(self._matching(lexical.compile_query(query), "id", list(chunk_ids)))

    def signature_outline(self, file_ids: list[int]) -> dict[int, list[tuple[int, str]]]:
        """File id -> (chunk id, signature) of each chunk, in line order."""
        if not file_ids:
            return {}
        out: dict[int, list[tuple[int, str]]] = {}
        for chunk_id, file_id, signature in self._sql(
            """SELECT id, file_id, signature FROM chunks WHERE file_id = ANY(%s)
               ORDER BY file_id, start_line, id""",
            (list(file_ids),),
        ):
            out.setdefault(int(file_id), []).append((int(chunk_id), signature))
        return out

    def chunks_by_ids(self, chunk_ids: list[int]) -> dict[int, ChunkRow]:
        if not chunk_ids:
            return {}
        rows = self._sql(f"{_CHUNK_SELECT} WHERE c.id = ANY(%s)", (list(chunk_ids),))
        return {int(r[0]): ChunkRow(int(r[0]), int(r[1]), *r[2:]) for r in rows}

    def chunks_defining(self, names: list[str], collection_ids: list[int]) -> list[tuple[int, str, str]]:
        if not names or not collection_ids:
            return []
        return [(int(i), n, k) for i, n, k in self._sql(
            """SELECT d.chunk_id, d.name, d.kind FROM definitions d JOIN chunks c ON c.id = d.chunk_id
               WHERE lower(d.name) = ANY(%s) AND c.collection_id = ANY(%s)
               ORDER BY d.chunk_id, d.line, d.name COLLATE "C", d.kind COLLATE "C" """,
            ([n.lower() for n in names], collection_ids))]

    def definition_counts(self, names: list[str], collection_ids: list[int]) -> dict[str, int]:
        if not names or not collection_ids:
            return {}
        return {str(n): int(k) for n, k in self._sql(
            """SELECT d.name, count(DISTINCT d.chunk_id) FROM definitions d JOIN chunks c ON c.id = d.chunk_id
               WHERE lower(d.name) = ANY(%s) AND c.collection_id = ANY(%s) GROUP BY d.name""",
            ([n.lower() for n in names], collection_ids))}

    def definitions_in(self, chunk_ids: list[int]) -> dict[int, list[tuple[str, int]]]:
        if not chunk_ids:
            return {}
        out: dict[int, list[tuple[str, int]]] = {}
        for chunk_id, name, line in self._sql(
            """SELECT chunk_id, name, line FROM definitions WHERE chunk_id = ANY(%s)
               ORDER BY chunk_id, line, name COLLATE "C", kind COLLATE "C" """,
            (list(chunk_ids),),
        ):
            out.setdefault(int(chunk_id), []).append((name, int(line)))
        return out

    def last_lines(self, file_ids: list[int]) -> dict[int, int]:
        if not file_ids:
            return {}
        rows = self._sql("SELECT file_id, max(end_line) FROM chunks WHERE file_id = ANY(%s) GROUP BY file_id",
                         (list(file_ids),))
        return {int(f): int(last) for f, last in rows}

    def chunks_of_files_named(self, stems: list[str], collection_ids: list[int]) -> list[int]:
        """First chunks of the first 50 files (by id) whose stem is one of stems: such files are
        candidates by name. The order is explicit: a hash aggregate returned any 50."""
        if not stems or not collection_ids:
            return []
        # a path segment starting `stem.`, any case: the stems IndexStore keeps (store/file_stems.py);
        # one alternation, not `~ ANY` of a pattern each: past 32 patterns PostgreSQL's cache of
        # compiled regexes misses on every row (33 patterns over 30k paths: 12.6 s against 0.27 s)
        pattern = "(^|/)(" + "|".join(re.escape(stem.lower()) for stem in stems) + ")\\."
        rows = self._sql(
            """SELECT min(c.id) FROM chunks c JOIN files f ON f.id = c.file_id
               WHERE f.collection_id = ANY(%s) AND lower(f.path) ~ %s GROUP BY f.id ORDER BY f.id LIMIT 50""",
            (collection_ids, pattern),
        )
        return [int(r[0]) for r in rows]


    def file_paths(self, collection_ids: list[int]) -> list[tuple[int, str]]:
        if not collection_ids:
            return []
        rows = self._sql("SELECT id, path FROM files WHERE collection_id = ANY(%s)", (list(collection_ids),))
        return [(int(r[0]), str(r[1])) for r in rows]

    def chunks_of_files(self, file_ids: list[int], limit: int) -> list[int]:
        rows = self._sql("SELECT id FROM chunks WHERE file_id = ANY(%s) LIMIT %s", (file_ids, limit))
        return [int(r[0]) for r in rows]

    def language_counts(self, collection_ids: list[int], limit: int = 8) -> list[tuple[str, int]]:
        """(language, files) of the collections, most files first."""
        if not collection_ids:
            return []
        rows = self._sql(
            """SELECT language, count(*) FROM files WHERE collection_id = ANY(%s) AND language IS NOT NULL
               GROUP BY language ORDER BY count(*) DESC, language LIMIT %s""",
            (list(collection_ids), limit),
        )
        return [(str(language), int(count)) for language, count in rows]

    def manifest_texts(self, collection_ids: list[int], names: Sequence[str]) -> list[str]:
        """The chunk texts of files named one of `names` (at the root or in any folder: there ASCII
        case folded, as SQLite's LIKE)."""
        if not collection_ids or not names:
            return []
        rows = self._sql(
            """SELECT c.text FROM chunks c JOIN files f ON f.id = c.file_id
               WHERE f.collection_id = ANY(%s) AND (f.path = ANY(%s) OR f.path ILIKE ANY(%s))
               ORDER BY c.id""",
            (list(collection_ids), list(names), [f"%/{name}" for name in names]),
        )
        return [str(text) for (text,) in rows]


def _one_lexeme(node: lexical.Node) -> str | None:
    """The lexeme of a query that is one word in any column (its df is kept in term_stats)."""
    if isinstance(node, lexical.Seq) and len(node.tokens) == 1 and node.column is None:
        return str(node.tokens[0])
    return None
