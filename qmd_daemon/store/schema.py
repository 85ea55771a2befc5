"""Schema and migrations. Each migration is a list of statements run in one transaction.

A database written by a newer qmd-daemon is refused with a clear error rather than altered.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.locks import waiting_for
from qmd_daemon.store.binary_codes import CODE_TABLES, derive_codes, rescale_unit_copies
from qmd_daemon.store.connection import (
    DatabaseError,
    OperationalError,
    connect,
    upgrade_lock_path,
    write_transaction,
)
from qmd_daemon.store.file_stems import FILE_STEMS_TABLE
from qmd_daemon.store.file_stems import fill as fill_file_stems
from qmd_daemon.store.fts_tokens import FTS_TOKENIZER
from qmd_daemon.store.kept_vectors import keep_on_delete
from qmd_daemon.store.static_vectors import STATIC_TABLES
from qmd_daemon.store.term_stats import TERM_STATS_TABLE
from qmd_daemon.store.term_stats import fill as fill_term_stats

# FTS: `porter` stems natural-language words; tokenchars '_' keeps snake_case identifiers whole,
# and the indexer appends their parts (and camelCase parts) so both forms match. The `collection`
# column holds one token per row (`qmdcol<id>`) so FTS5 itself narrows to the searched
# collections instead of ranking every collection's matches first.
_V1 = [
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE collections (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        root TEXT NOT NULL,
        updated_at REAL,
        index_format TEXT NOT NULL DEFAULT ''
    )""",
    """CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        collection_id INTEGER NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        hash TEXT NOT NULL,
        language TEXT,
        kind TEXT NOT NULL,
        line_count INTEGER NOT NULL DEFAULT 0,
        UNIQUE (collection_id, path)
    )""",
    """CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        text TEXT NOT NULL,
        symbols TEXT NOT NULL DEFAULT '',
        signature TEXT NOT NULL DEFAULT '',
        heading TEXT NOT NULL DEFAULT '',
        hash TEXT NOT NULL
    )""",
    "CREATE INDEX chunks_by_file ON chunks(file_id, seq)",
    "CREATE INDEX chunks_by_hash ON chunks(hash)",
    """CREATE TABLE definitions (
        chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        line INTEGER NOT NULL
    )""",
    "CREATE INDEX definitions_by_name ON definitions(name COLLATE NOCASE)",
    "CREATE INDEX definitions_by_chunk ON definitions(chunk_id)",
    """CREATE TABLE links (
        doc_chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
        code_file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        via TEXT NOT NULL,
        PRIMARY KEY (doc_chunk_id, code_file_id)
    )""",
    "CREATE INDEX links_by_code ON links(code_file_id)",
    f"""CREATE VIRTUAL TABLE chunks_fts USING fts5(
        collection, path, symbols, body, tokenize = "{FTS_TOKENIZER}"
    )""",
    """CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
        DELETE FROM chunks_fts WHERE rowid = old.id;
    END""",
    """CREATE TABLE llm_cache (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        created_at REAL NOT NULL
    )""",
]


def _derive_existing_codes(conn: Any) -> None:
    """Codes for the vectors an older index already holds, from those vectors (no re-embedding).
    Without sqlite-vec loaded they cannot be read: search then stays exact until the next
    `embed` derives them (VectorIndex.ensure)."""
    model = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'vector_%'").fetchall())
    if "vector_model" not in model:
        return
    try:
        derive_codes(conn, model.get("vector_quantization") or "float")
    except OperationalError as exc:  # sqlite-vec absent: "no such module: vec0"
        if "vec0" not in str(exc):
            raise
        return
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('vector_codes', ?)", (model["vector_model"],)
    )


def _codes_at_whole_range(conn: Any) -> None:
    """Codes and copies as binary_codes.code_rows makes them: derived from the stored vectors
    where there are none yet (an index from before schema 2, or one whose sqlite-vec was absent),
    an int8 index's 'unit' copies of schema 2 rescaled in place."""
    model = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'vector_%'").fetchall())
    if "vector_model" not in model:
        return
    if model.get("vector_codes") != model["vector_model"]:
        _derive_existing_codes(conn)
    elif model.get("vector_quantization") == "int8":
        rescale_unit_copies(conn)


# V2: binary codes of the vectors, scanned before the vectors themselves (store/binary_codes.py);
# V3 fills them (V2 derived them itself until copies were scaled to the whole int8 range).
# V4: each token's chunks per collection (store/term_stats.py), counted from the FTS rows.
# V5: files by the stems of their names (store/file_stems.py).
# V7: chunks_fts's rows are deleted by the store (store/fts_batch.py), in rowid order at commit,
# not by a trigger as each chunk goes: an update then writes at most two FTS5 segments, not one
# per changed file.
# V6: definitions by name with their chunk, so the chunks defining a name are counted on the index
# alone (IndexStore.definition_counts: `__init__`'s 9,363 chunks at 503k, 15 -> 3 ms).
# V8: a process whose code is older than the index's schema cannot write to it (refuse_older_writers,
# made again at every upgrade's last step), so a daemon left running across `pip install -U`
# cannot change files without keeping up the tables it does not know of.
# V9: the static tier's chunk vectors and token counts (store/static_vectors.py).
# V10: a deleted chunk's deep vector kept under its content hash, for an identical chunk that comes
# back (a branch switched back to, a revert, a move): store/kept_vectors.py.
MIGRATIONS: dict[int, list[str | Callable[[Any], None]]] = {
    1: list(_V1),
    2: list(CODE_TABLES),
    3: [_codes_at_whole_range],
    4: [TERM_STATS_TABLE, fill_term_stats],
    5: [*FILE_STEMS_TABLE, fill_file_stems],
    6: [
        "CREATE INDEX IF NOT EXISTS definitions_by_name_chunk ON definitions(name COLLATE NOCASE, chunk_id)",
        "DROP INDEX IF EXISTS definitions_by_name",
    ],
    7: ["DROP TRIGGER IF EXISTS chunks_fts_delete"],
    8: [],
    9: list(STATIC_TABLES),
    10: [keep_on_delete],
}
SCHEMA_VERSION = max(MIGRATIONS)


def current_version(conn: Any) -> int:
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    if not has_meta:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


# The SQL function each writer of this code registers (migrate), returning the schema it maintains.
# Code from before V8 lacks it, so its first write fails ("no such function: qmd_writer_schema").
WRITER_SCHEMA_FUNCTION = "qmd_writer_schema"
# Writes to `files` (one row per file, changed with every chunk write of an update or a removal);
# not `chunks`: a trigger per chunk row would cost a full build a Python call per chunk.
_GUARDED = [("files", event) for event in ("INSERT", "UPDATE", "DELETE")]


def older_writer_message(version: int) -> str:
    return (
        f"the index was upgraded to schema {version} by a newer qmd-daemon; this process runs "
        "older code and may not write to it: restart it (`qmd-daemon stop`; clients start the new one)"
    )


def refuse_older_writers(conn: Any) -> None:
    """Triggers that abort any write to `files` from a connection whose code maintains an older
    schema than SCHEMA_VERSION: every derived table (term_stats, file_stems, ...) is kept up by
    the code that writes, so only code that knows all of them may write. Checked by SQLite inside
    each writing statement, so no write can slip between a check and the write."""
    for table, event in _GUARDED:
        name = f"older_writer_guard_{table}_{event.lower()}"
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        message = older_writer_message(SCHEMA_VERSION).replace("'", "''")
        conn.execute(
            f"CREATE TRIGGER {name} BEFORE {event} ON {table} "
            f"WHEN {WRITER_SCHEMA_FUNCTION}() < {SCHEMA_VERSION} "
            f"BEGIN SELECT RAISE(ABORT, '{message}'); END"
        )


@contextlib.contextmanager
def refused_to_older_code(conn: Any, path: Path) -> Iterator[None]:
    """A write that fails (refuse_older_writers' trigger aborts it) on an index that newer code
    upgraded meanwhile is reported as that, in one line: the trigger's error is a constraint
    failure like any other (its code cannot tell them apart), the index's version can."""
    try:
        yield
    except DatabaseError as exc:
        try:
            version = current_version(conn)
        except DatabaseError:
            raise exc from None  # a damaged or busy index: the write's own error says so
        if version > SCHEMA_VERSION:
            raise IndexDatabaseError(f"index {path}: {older_writer_message(version)}") from None
        raise


def register_writer(conn: Any) -> None:
    """Declare on `conn` the schema this code maintains (read by refuse_older_writers' triggers)."""
    conn.create_function(WRITER_SCHEMA_FUNCTION, 0, lambda: SCHEMA_VERSION, deterministic=True)


def upgraded_past_this_code(path: Path) -> int | None:
    """The schema of the index at `path` when newer code upgraded it past this code's (a daemon
    left running across an upgrade: its writes are refused, so it should make way), else None."""
    if not path.is_file():
        return None
    conn, _ = connect(path, readonly=True)
    try:
        version = current_version(conn)
    finally:
        conn.close()
    return version if version > SCHEMA_VERSION else None


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def migrate(conn: Any, path: str, notify: Callable[[str], None] = _to_stderr) -> None:
    """Bring the schema to SCHEMA_VERSION; each step is atomic (a process killed mid-step leaves the
    index at the step before, and the next open runs it again). The steps after an upgrade can take
    minutes on a big index (term_stats: ~80 s of CPU at 500k chunks), so they are announced on
    stderr, and run by one process at a time: another one opening the index (the daemon and an
    in-process fallback, two `ai-search` calls) says it waits, then finds them done instead of
    running them again or failing at SQLite's 30 s busy timeout."""
    register_writer(conn)
    version = _checked_version(conn, path)
    if version == SCHEMA_VERSION:
        return
    waiting = f"qmd-daemon: waiting for another process upgrading the index {path}"
    with waiting_for(upgrade_lock_path(Path(path)), waiting, notify=notify, remove=True):
        version = _checked_version(conn, path)  # another process may have run the steps meanwhile
        if 0 < version < SCHEMA_VERSION:
            notify(
                f"qmd-daemon: upgrading the index {path} from schema {version} to {SCHEMA_VERSION} "
                "(once after an upgrade; a few minutes on a big index)"
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with write_transaction(conn, Path(path)):
                for step in MIGRATIONS[target]:
                    if callable(step):
                        step(conn)
                    else:
                        conn.execute(step)
                if target == SCHEMA_VERSION:
                    refuse_older_writers(conn)
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(target),)
                )


def _checked_version(conn: Any, path: str) -> int:
    """The index's schema version, refused when newer than this code or not an index of ours."""
    version = current_version(conn)
    if version > SCHEMA_VERSION:
        raise IndexDatabaseError(
            f"index {path} has schema version {version}, newer than this qmd-daemon understands "
            f"({SCHEMA_VERSION}); upgrade qmd-daemon or point QMD_INDEX_PATH elsewhere"
        )
    if version == 0:
        foreign = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ).fetchone()[0]
        if foreign:
            raise IndexDatabaseError(f"{path} is a SQLite database, but not a qmd-daemon index")
    return version
