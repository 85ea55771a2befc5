"""Every cross-process lock of the engine, on `filelock` (flock on POSIX, msvcrt on Windows), so
no module imports a POSIX-only module: `fcntl` at import time made every command fail on Windows.

A held lock file holds its holder's pid, so whoever waits can say for whom. The kernel drops the
lock when its process dies (kill -9 included): a lock is never stale, whatever the file holds.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import filelock
from filelock import FileLock, Timeout

from qmd_daemon.errors import QmdError

_POLL_S = 0.25
_GRACE_S = 0.5
_UNSAID = object()  # nothing said yet about who holds the lock


class LockBusy(QmdError):
    """The lock is held by another process (a non-blocking try, or a wait that was cancelled)."""

    http_status = 409
    code = "busy"


def writer_lock_path(index_path: Path) -> Path:
    """The lock that lets one process at a time write the index (next to it: one per index)."""
    return index_path.with_name(index_path.name + ".writer.lock")


def _record_pid(fd: int) -> None:
    """Write this process's pid in the lock file, unless it is there already (this process held
    the lock last: an update takes it once per collection, and a truncate waits for the disk's
    journal, 23-73 ms a time on a busy disk, which was 1.3-4 s of a no-change update). The pid
    only names the holder: on a full disk (ENOSPC) the lock is held without it, else every
    command, a read-only `status` or search included, failed with a bare `No space left on
    device`."""
    pid = str(os.getpid()).encode("ascii")
    os.lseek(fd, 0, os.SEEK_SET)
    if os.read(fd, len(pid) + 1) == pid:
        return
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    with contextlib.suppress(OSError):
        os.write(fd, pid)


def holder_pid(path: Path) -> int | None:
    """The pid the lock's current holder wrote first in the file (None when unknown)."""
    try:
        return int(path.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None


# Native locks (flock, msvcrt) let the holder write its pid; filelock's soft lock, used where
# neither exists, writes its own record, pid first.
_NATIVE = sys.platform == "win32" or filelock.has_fcntl


def file_lock(path: Path) -> FileLock:
    """A lock on `path` (created 0600) that records its holder's pid; not reentrant across
    instances: two FileLocks on one path exclude each other, in one process too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path, mode=0o600, thread_local=False, on_acquired=_record_pid if _NATIVE else None)


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def waiting_for(
    path: Path,
    waiting: str,
    *,
    notify: Callable[[str], None] = _to_stderr,
    cancelled: Callable[[], bool] | None = None,
    remove: bool = False,
) -> Iterator[None]:
    """Hold `path`, waiting as long as another process holds it; while waiting, say so once per
    holder ("<waiting> (pid N)...") so a queued writer never looks hung. `cancelled` returning
    True ends the wait with LockBusy (a daemon shutting down). `remove`: the file is unlinked
    before the lock is let go (nothing left beside a user's file); a waiter that opened it then
    finds it unlinked and takes a new one (filelock checks, as for Windows' own unlink)."""
    lock = file_lock(path)
    told: object = _UNSAID  # the holder's pid last announced
    while True:
        try:
            lock.acquire(timeout=0 if told is _UNSAID else _POLL_S)
            break
        except Timeout:
            pid = holder_pid(path)
            if told != pid:
                notify(f"{waiting} (pid {pid})..." if pid else f"{waiting}...")
                told = pid
            if cancelled is not None and cancelled():
                raise LockBusy(f"gave up {waiting} (pid {pid})") from None
    try:
        yield
    finally:
        if remove:
            with contextlib.suppress(OSError):  # Windows: an open file stays; filelock unlinks it
                path.unlink()
        lock.release()


@contextlib.contextmanager
def held_or_busy(path: Path, busy: LockBusy) -> Iterator[None]:
    """Hold `path` now, or raise `busy` when another process holds it (after _GRACE_S: `held_by`
    holds it that briefly to ask, and a question must not turn a run away)."""
    lock = file_lock(path)
    try:
        lock.acquire(timeout=_GRACE_S)
    except Timeout:
        raise busy from None
    try:
        yield
    finally:
        lock.release()


def held_by(path: Path) -> int | None:
    """The pid of the process that holds the lock on `path` now (0: it wrote none), else None.
    Asked by taking the lock and letting go at once, writing no pid (held_or_busy waits a moment
    for it). Not while this process holds it: two locks on one path exclude each other."""
    if not path.exists():
        return None
    lock = FileLock(path, thread_local=False)
    try:
        lock.acquire(blocking=False)
    except Timeout:
        return holder_pid(path) or 0
    lock.release()
    return None
