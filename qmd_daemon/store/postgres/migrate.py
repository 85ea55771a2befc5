"""Copy a local SQLite index into PostgreSQL (`qmd-daemon migrate --to postgres`), so nobody
re-embeds: collections, files, chunks, definitions, links, the active model's vectors and the
vectors kept for deleted chunks (store/kept_vectors.py: a branch left before the migration is
switched back to without the embedder), the static tier's vectors and token counts, and the LLM
cache.

Each collection is copied in one transaction (all or nothing) under an advisory lock on its name;
a collection the server already holds is skipped, so a run that was interrupted is resumed by
running it again. Ids are drawn from the server's own sequences and every reference is mapped to
them, so a local index can join a shared database that other machines already filled.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from qmd_daemon.progress import progress_bar
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.postgres.chunk_store import analysed, lock_collection
from qmd_daemon.store.postgres.connection import PostgresDatabase
from qmd_daemon.store.postgres.schema import enable_pgvector, migrate
from qmd_daemon.store.postgres.static_vectors import PostgresStaticVectors
from qmd_daemon.store.postgres.vectors import PostgresVectorIndex, vector_literal
from qmd_daemon.store.static_vectors import StaticVectors
from qmd_daemon.store.vectors import VectorIndex
from qmd_daemon.text.chunk_model import Chunk, Definition


@dataclass
class MigrationReport:
    copied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already on the server
    # skipped, and the server's collection of that name holds other files: another repository
    conflicts: list[str] = field(default_factory=list)
    chunks: int = 0
    vectors: int = 0
    kept_vectors: int = 0  # deep vectors of deleted chunks, for an identical chunk's return
    cache_entries: int = 0
    vectors_left: str = ""  # why vectors were not copied, when they were not
    static_vectors: int = 0
    static_left: str = ""  # why static vectors were not copied (the next static pass pools them)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _new_ids(db: PostgresDatabase, table: str, old: Sequence[int]) -> dict[int, int]:
    """One id from TABLE's own sequence for each old id (concurrent writers never collide)."""
    if not old:
        return {}
    rows = db.execute(
        "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", (table, len(old))
    ).fetchall()
    return dict(zip(old, (int(r[0]) for r in rows), strict=True))


def _copy_rows(db: PostgresDatabase, table: str, columns: str, rows: Iterable[Sequence[Any]]) -> int:
    count = 0
    with db.connection().cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count


class _Copier:
    """One migration: the source, the server, and what the server's vector table can take."""

    def __init__(self, source: IndexStore, db: PostgresDatabase, report: MigrationReport):
        self.source, self.db, self.report = source, db, report
        self.vector_kind = self._vector_plan()
        self.static = self._static_plan()

    def _vector_plan(self) -> str | None:
        """The stored form of the source's vectors ('float' / 'int8') when the server can take
        them: its vector table is empty of any model or holds the same one."""
        if not self.source.supports_vectors:
            self.report.vectors_left = "sqlite-vec could not be loaded here, so no vectors were read"
            return None
        active = VectorIndex(self.source).active_model()
        if active is None:
            return None
        missing = enable_pgvector(self.db)
        if missing is not None:
            self.report.vectors_left = missing
            return None
        fingerprint, dim, stored = active
        target = PostgresVectorIndex(self.db).active_model()
        if target is not None and target[:2] != (fingerprint, dim):
            self.report.vectors_left = (
                f"the server's vectors are of another model ({target[0]}); run `qmd-daemon embed` there"
            )
            return None
        PostgresVectorIndex(self.db, quantization=target[2] if target else stored).ensure(fingerprint, dim)
        return stored

    def _static_plan(self) -> bool:
        """Whether the source's static vectors can be copied: the server holds none yet or the
        same static model's (another model's would be dropped by the next pass anyway)."""
        fingerprint = StaticVectors(self.source).active_model()
        if fingerprint is None:
            return False
        target = PostgresStaticVectors(self.db)
        current = target.active_model()
        if current is not None and current != fingerprint:
            self.report.static_left = (
                f"the server's static vectors are of another model ({current}); "
                "the next `qmd-daemon embed` there pools these collections"
            )
            return False
        target.ensure(fingerprint)
        return True

    def _same_files(self, old_id: int, server_id: int) -> bool:
        """Whether most of a sample of the local collection's paths are in the server's one of its
        name: the same repository (an interrupted copy, a teammate's), not another that took the
        name first (each side's updates would then replace the other's files)."""
        sample = [p for (p,) in self.source.conn.execute(
            "SELECT path FROM files WHERE collection_id = ? ORDER BY id LIMIT 20", (old_id,))]
        row = self.db.execute(
            "SELECT count(*) FROM files WHERE collection_id = %s AND path = ANY(%s)", (server_id, sample)
        ).fetchone()
        return not sample or 2 * int(row[0] if row else 0) > len(sample)

    def collection(self, row: tuple[Any, ...], bar: Any) -> None:
        old_id, name, root, updated_at, index_format = row
        db, conn = self.db, self.source.conn
        with db.transaction():
            lock_collection(db, name)
            there = db.execute("SELECT id FROM collections WHERE name = %s", (name,)).fetchone()
            if there is not None:
                self.report.skipped.append(name)
                if not self._same_files(old_id, int(there[0])):
                    self.report.conflicts.append(name)
                return
            (new_id,) = db.execute(
                "INSERT INTO collections (name, root, updated_at, index_format) VALUES (%s, %s, %s, %s) "
                "RETURNING id",
                (name, root, updated_at, index_format),
            ).fetchone()  # type: ignore[misc]
            files = conn.execute(
                "SELECT id, path, size, mtime_ns, hash, language, kind, line_count FROM files "
                "WHERE collection_id = ? ORDER BY id",
                (old_id,),
            ).fetchall()
            file_ids = _new_ids(db, "files", [f[0] for f in files])
            _copy_rows(
                db,
                "files",
                "id, collection_id, path, size, mtime_ns, hash, language, kind, line_count",
                ((file_ids[f[0]], new_id, *f[1:]) for f in files),
            )
            chunk_sql = """SELECT c.id, c.file_id, c.seq, c.start_line, c.end_line, c.text, c.symbols,
                                  c.signature, c.heading, c.hash, f.path
                           FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.collection_id = ?
                           ORDER BY c.id"""
            chunk_ids = _new_ids(db, "chunks", [r[0] for r in conn.execute(chunk_sql, (old_id,))])
            self.report.chunks += _copy_rows(
                db,
                "chunks",
                "id, file_id, collection_id, seq, start_line, end_line, text, symbols, signature, heading, "
                "hash, fts, token_count",
                (
                    (chunk_ids[c[0]], file_ids[c[1]], new_id, *c[2:10], *_terms(c[10], *c[3:7]))
                    for c in conn.execute(chunk_sql, (old_id,))
                ),
            )
            self._definitions_and_links(old_id, chunk_ids, file_ids)
            if self.vector_kind:
                self.report.vectors += _copy_rows(
                    db,
                    "chunk_vectors",
                    "chunk_id, collection_id, embedding",
                    self._vectors(chunk_ids, new_id),
                )
                self.report.kept_vectors += self._kept(old_id, new_id)
            if self.static:
                self._static(old_id, new_id, chunk_ids)
            bar.update(len(chunk_ids))
        self.report.copied.append(name)

    def _definitions_and_links(
        self, old_id: int, chunk_ids: dict[int, int], file_ids: dict[int, int]
    ) -> None:
        conn = self.source.conn
        in_collection = (
            "JOIN chunks c ON c.id = {0} JOIN files f ON f.id = c.file_id WHERE f.collection_id = ?"
        )
        definitions = conn.execute(
            "SELECT d.chunk_id, d.name, d.kind, d.line FROM definitions d "
            + in_collection.format("d.chunk_id"),
            (old_id,),
        )
        _copy_rows(
            self.db,
            "definitions",
            "chunk_id, name, kind, line",
            ((chunk_ids[d[0]], *d[1:]) for d in definitions),
        )
        links = conn.execute(
            "SELECT l.doc_chunk_id, l.code_file_id, l.via FROM links l "
            + in_collection.format("l.doc_chunk_id"),
            (old_id,),
        )
        _copy_rows(
            self.db,
            "links",
            "doc_chunk_id, code_file_id, via",
            ((chunk_ids[doc], file_ids[code], via) for doc, code, via in links if code in file_ids),
        )

    def _static(self, old_id: int, new_id: int, chunk_ids: dict[int, int]) -> None:
        """The collection's static vectors of their chunks' current text, and its token counts."""
        conn = self.source.conn
        vectors = conn.execute(
            """SELECT s.chunk_id, s.hash, s.vector FROM static_vectors s
               JOIN chunks c ON c.id = s.chunk_id AND c.hash = s.hash JOIN files f ON f.id = c.file_id
               WHERE f.collection_id = ?""",
            (old_id,),
        )
        self.report.static_vectors += _copy_rows(
            self.db, "static_vectors", "chunk_id, hash, vector",
            ((chunk_ids[chunk_id], content_hash, blob) for chunk_id, content_hash, blob in vectors),
        )  # fmt: skip
        counts = conn.execute("SELECT token, df FROM static_token_df WHERE collection_id = ?", (old_id,))
        _copy_rows(self.db, "static_token_df", "collection_id, token, df",
                   ((new_id, token, df) for token, df in counts))  # fmt: skip

    def _kept(self, old_id: int, new_id: int) -> int:
        """The collection's kept vectors (the same model's, as its live ones: VectorIndex.ensure
        empties the kept table on every model change), oldest first so the server's cap drops them
        first too. A hash the server keeps already holds that content's vector: left as it is."""
        decode = _decoder(self.vector_kind or "float")
        rows = [
            (content_hash, new_id, decode(blob))
            for content_hash, blob in self.source.conn.execute(
                "SELECT hash, embedding FROM kept_vectors WHERE collection_id = ? ORDER BY id", (old_id,)
            )
        ]
        return self.db.executemany(
            "INSERT INTO kept_vectors (hash, collection_id, embedding) VALUES (%s, %s, %s) "
            "ON CONFLICT (hash) DO NOTHING",
            rows,
        )

    def _vectors(self, chunk_ids: dict[int, int], collection_id: int) -> Iterable[tuple[int, int, str]]:
        decode = _decoder(self.vector_kind or "float")
        for old, new in chunk_ids.items():
            row = self.source.conn.execute(
                "SELECT embedding FROM chunk_vectors WHERE rowid = ?", (old,)
            ).fetchone()
            if row is not None:
                yield new, collection_id, vector_literal(decode(row[0]))

    def llm_cache(self) -> None:
        rows = self.source.conn.execute("SELECT key, value, created_at FROM llm_cache").fetchall()
        with self.db.transaction():
            self.report.cache_entries = self.db.executemany(
                "INSERT INTO llm_cache (key, value, created_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (key) DO NOTHING",
                rows,
            )


def _terms(path: str, start_line: int, end_line: int, text: str, symbols: str) -> tuple[str, int]:
    """The chunk's tsvector and token count, made as PostgresChunkStore makes them on a write.
    SYMBOLS is the stored `" ".join(chunk.symbols)`, carried as one name so it is analysed as
    stored (split into names, a heading's repeated word would be dropped as a duplicate name)."""
    names = [Definition(symbols, "", 0)] if symbols else []
    return analysed(path, Chunk(start_line, end_line, text, definitions=names))


def _decoder(stored: str) -> Callable[[bytes], list[float]]:
    """A stored sqlite-vec blob as numbers: float32, or int8 (cosine ignores int8's scale)."""
    if stored == "int8":
        return lambda blob: list(struct.unpack(f"{len(blob)}b", blob))
    return lambda blob: list(struct.unpack(f"{len(blob) // 4}f", blob))


def copy_index(source: IndexStore, db: PostgresDatabase, show: bool | None = None) -> MigrationReport:
    """Copy every collection of SOURCE that the server does not hold yet, then the LLM cache."""
    migrate(db)
    report = MigrationReport()
    copier = _Copier(source, db, report)
    collections = source.conn.execute(
        "SELECT id, name, root, updated_at, index_format FROM collections ORDER BY name"
    ).fetchall()
    total = source.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    with progress_bar("copying", "chunk", show, total=total) as bar:
        for row in collections:
            copier.collection(row, bar)
    if copier.vector_kind:
        PostgresVectorIndex(db).trim_kept()  # the server's cap over what it kept and what came
    copier.llm_cache()
    return report


def copy_sqlite_index(source: IndexStore, database_url: str, show: bool | None = None) -> dict[str, Any]:
    """copy_index to the server DATABASE_URL names, its connection closed after."""
    db = PostgresDatabase(database_url)
    try:
        return copy_index(source, db, show).as_dict()
    finally:
        db.close()
