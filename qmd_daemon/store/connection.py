"""Opening the index with a SQLite build that can load sqlite-vec.

Many Python builds (this machine's pyenv python among them) cannot load SQLite extensions, so an
extension-capable binding from PyPI (pysqlite3-binary) is preferred, then the stdlib module when
it can load extensions. Without either, lexical search still works and vectors are reported off.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import sqlite3 as _stdlib_sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from qmd_daemon.errors import IndexDatabaseError, QueryRejected


def _pick_module() -> ModuleType:
    try:
        import pysqlite3.dbapi2 as module  # type: ignore[import-not-found]

        return module
    except ImportError:
        return _stdlib_sqlite3


sqlite = _pick_module()
DatabaseError: type[Exception] = sqlite.DatabaseError
OperationalError: type[Exception] = sqlite.OperationalError
REBUILD_HINT = "move it away and run `qmd-daemon update` to rebuild it from the registered collections"
# primary result codes (sqlite3.h)
_SQLITE_ERROR, _SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_NOTADB = 1, 10, 11, 13, 26
# below this much free space an I/O error opening the index is the disk being full: SQLite cannot
# make its -shm file (32 KiB) beside the index
_OPEN_ROOM_BYTES = 2**20


def _free_space(path: Path) -> int | None:
    try:
        return shutil.disk_usage(path.parent).free
    except OSError:
        return None


def _free_said(free: int | None) -> str:
    return "its disk is full" if free is None else f"{free / 2**20:.1f} MiB free on its disk"


def index_error(exc: BaseException, path: Path) -> IndexDatabaseError | None:
    """The one line a user gets for SQLite's disk-full and damaged-file errors (by result code,
    not message text); None for any other error, which keeps its own type."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(exc, DatabaseError) or code is None:
        return None
    if code & 0xFF == _SQLITE_FULL:
        return IndexDatabaseError(
            f"disk full: the index {path} could not grow ({_free_said(_free_space(path))}); free "
            "some space and run it again (the unfinished change was rolled back)"
        )
    if code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return IndexDatabaseError(f"index {path} is damaged ({exc}); {REBUILD_HINT}")
    return None


def user_error(exc: BaseException) -> IndexDatabaseError | None:
    """The one line a front end prints for any SQLite error that reached it (None: not SQLite's):
    busy, locked or a statement refused leave the file fine; anything else may be damage."""
    if isinstance(exc, OperationalError):
        return IndexDatabaseError(f"the index could not do that right now ({exc}); try again")
    if isinstance(exc, DatabaseError):
        return IndexDatabaseError(
            f"the index is damaged ({exc}); move it away and run `qmd-daemon update`"
        )
    return None


@contextlib.contextmanager
def rejected_queries() -> Iterator[None]:
    """A MATCH expression FTS5 refuses (its syntax) raises QueryRejected: SQLITE_ERROR is the
    result code of a statement SQLite cannot run; busy, locked or damaged keep their own."""
    try:
        yield
    except OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", _SQLITE_ERROR) & 0xFF != _SQLITE_ERROR:
            raise
        raise QueryRejected(f"the index cannot run this query ({exc})") from None


@contextlib.contextmanager
def write_transaction(conn: Any, path: Path) -> Iterator[None]:
    """One write transaction: everything inside lands together or not at all. A failure is
    reported as itself: SQLite has already rolled back after some (disk full), and a second
    ROLLBACK raised "cannot rollback - no transaction is active" in its place."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            with contextlib.suppress(DatabaseError):
                conn.execute("ROLLBACK")
        readable = index_error(exc, path)
        if readable is not None:
            raise readable from exc
        raise


def upgrade_lock_path(index_path: Path) -> Path:
    """The lock held while the index's schema is brought up to date (store/schema.migrate), next
    to it; the file is there only while a process runs the steps (or after one was killed mid-way),
    so the daemon can say why a search waits."""
    return index_path.with_name(index_path.name + ".upgrade.lock")


def _create(path: Path) -> None:
    """A new index appears whole: its header is written under a temporary name, then linked in
    (never over a file another process created meanwhile). So an empty file at the index path is
    never one of ours, and is refused rather than silently taken as a new index."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # the index holds copies of private source: user-only, like the state files (SQLite gives the
    # -wal and -shm files the database file's mode)
    # mkstemp: a name no other thread or process holds (O_EXCL, mode 0600); the pid in it lets a
    # later open clear what a creator killed mid-way left behind (_clear_dead_creations)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.new-{os.getpid()}-", dir=path.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        conn = sqlite.connect(str(temporary), isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")  # writes the header
        finally:
            conn.close()
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process created it meanwhile: theirs is the index
        except OSError:  # a filesystem without hard links (FAT): a rename, if it is still free
            if not path.exists():
                os.replace(temporary, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _pid_gone(pid: int) -> bool:
    """Whether no process `pid` runs (POSIX; on Windows signal 0 would end the process, so there a
    leftover is never taken for dead)."""
    if os.name == "nt":  # pragma: no cover - exercised on Windows only
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _clear_dead_creations(path: Path) -> None:
    """Remove the temporary files (`.NAME.new-PID...`, and their -wal/-shm) of index creations
    whose process died mid-way (kill -9): nothing else would ever remove them."""
    leftover = re.compile(rf"\.{re.escape(path.name)}\.new-(\d+)(?:-|$)")
    with contextlib.suppress(OSError):
        for entry in os.scandir(path.parent):
            match = leftover.match(entry.name)
            if match and int(match.group(1)) != os.getpid() and _pid_gone(int(match.group(1))):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _load_vec(conn: Any) -> bool:
    if not hasattr(conn, "enable_load_extension"):
        return False
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return False
    # The extension is loaded from the package folder without importing the package: its
    # __init__ imports numpy, and numpy loaded before a CUDA build of llama.cpp made model loads
    # crash (see models.runtime.llama_module).
    extension = os.path.join(next(iter(spec.submodule_search_locations)), "vec0")
    try:
        conn.enable_load_extension(True)
        conn.load_extension(extension)
        conn.enable_load_extension(False)
        return True
    except (AttributeError, sqlite.OperationalError):
        return False


def connect(path: Path, *, readonly: bool = False) -> tuple[Any, bool]:
    """Open (creating if needed) the index; returns the connection and whether sqlite-vec loaded."""
    if path.exists() and path.is_dir():
        raise IndexDatabaseError(f"index path {path} is a folder, not a SQLite file")
    if not readonly:
        _clear_dead_creations(path)
    if not readonly and not path.exists():
        _create(path)
    if path.exists() and path.stat().st_size == 0:
        raise IndexDatabaseError(
            f"index {path} is an empty file, not an index (an interrupted copy or a crash leaves one); "
            "delete it to start a new index, or put the full copy back"
        )
    if not readonly and path.exists() and _read_only_mount(path):
        # os.access says no as for a file mode, and `chmod 600` cannot help there
        raise IndexDatabaseError(
            f"index {path} is on a read-only file system; it need not be rebuilt: mount it "
            "read-write, or set QMD_INDEX_PATH to a place this user can write"
        )
    if path.exists() and not os.access(path, os.R_OK if readonly else os.R_OK | os.W_OK):
        # SQLite says only "unable to open database file", which read as a damaged index whose
        # fix is a rebuild: hours of embedding lost over a file mode
        raise IndexDatabaseError(
            f"index {path} cannot be {'read' if readonly else 'read and written'} by this user "
            f"(permission denied); it need not be rebuilt: `chmod 600` it, or run as its owner"
        )
    target = f"file:{path}?mode=ro" if readonly else str(path)
    try:
        conn = sqlite.connect(
            target, uri=readonly, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA busy_timeout = 30000")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite.DatabaseError as exc:
        raise _open_error(exc, path) from None
    return conn, _load_vec(conn)


def _open_error(exc: BaseException, path: Path) -> IndexDatabaseError:
    """Why the index could not be opened. On a full disk SQLite says only `disk I/O error` (its
    -shm file cannot be made), which read as a file to move away and rebuild: every vector thrown
    away over a disk that needed room."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    free = _free_space(path)
    if code == _SQLITE_FULL or (code == _SQLITE_IOERR and free is not None and free < _OPEN_ROOM_BYTES):
        return IndexDatabaseError(
            f"disk full: the index {path} cannot be opened ({_free_said(free)}; SQLite needs room "
            "beside it for its -shm and -wal files); free some space and run it again (the index "
            "was not changed: it need not be rebuilt)"
        )
    return IndexDatabaseError(f"index {path} is not a usable SQLite database ({exc}); {REBUILD_HINT}")


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        return False


def quick_check(path: Path) -> None:
    """A damaged index is found before a request trips over it: SQLite's quick_check reads every
    page once (seconds for a few hundred MB), on a read-only connection of its own, so the daemon
    runs it at start on a thread beside its first answers. Raises IndexDatabaseError naming the fix."""
    if not path.exists():
        return
    conn, _ = connect(path, readonly=True)
    try:
        problem = conn.execute("PRAGMA quick_check(1)").fetchone()[0]
    except DatabaseError as exc:
        raise index_error(exc, path) or IndexDatabaseError(
            f"index {path} could not be checked ({exc}); {REBUILD_HINT}"
        ) from None
    finally:
        conn.close()
    if problem != "ok":
        problem = " ".join(str(problem).split())  # one line: quick_check's report has several
        raise IndexDatabaseError(f"index {path} is damaged ({problem}); {REBUILD_HINT}")
