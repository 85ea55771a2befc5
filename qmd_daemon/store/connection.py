"""Opening the index with a SQLite build that can load sqlite-vec.

Many Python builds (this machine's pyenv python among them) cannot load SQLite extensions, so an
extension-capable binding from PyPI (pysqlite3-binary) is preferred, then the stdlib module when
it can load extensions. Without either, lexical search still works and vectors are reported off.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3 as _stdlib_sqlite3
from pathlib import Path
from types import ModuleType
from typing import Any

from qmd_daemon.errors import IndexDatabaseError


def _pick_module() -> ModuleType:
    try:
        import pysqlite3.dbapi2 as module  # type: ignore[import-not-found]

        return module
    except ImportError:
        return _stdlib_sqlite3


sqlite = _pick_module()
DatabaseError: type[Exception] = sqlite.DatabaseError
OperationalError: type[Exception] = sqlite.OperationalError


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
        # The index holds copies of private source: user-only, like the state files. SQLite gives
        # the -wal and -shm files the database file's mode.
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
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
        raise IndexDatabaseError(
            f"index {path} is not a usable SQLite database ({exc}); move it away and run "
            "`qmd-daemon update` to rebuild it"
        ) from None
    return conn, _load_vec(conn)
