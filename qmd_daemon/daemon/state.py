"""The state file (`{port, token, pid, version, started_at}`, mode 0600, written atomically) and
the lifetime lock that makes "one daemon per home" hold even when many clients start one at once.

The lock is an advisory `flock` held for the daemon's whole life: the kernel drops it when the
process dies (kill -9 included), so a state file whose lock is free is stale by definition.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from qmd_daemon.daemon import LOCK_FILE, STATE_FILE


@dataclass(frozen=True)
class DaemonState:
    port: int
    token: str
    pid: int
    version: str
    started_at: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def ensure_private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)


def write_state(state_dir: Path, state: DaemonState) -> Path:
    """Temp file (0600 from creation) + fsync + rename: readers see the old file or the new one."""
    ensure_private_dir(state_dir)
    target = state_path(state_dir)
    fd, tmp = tempfile.mkstemp(prefix=".daemon-", suffix=".tmp", dir=state_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.chmod(tmp, 0o600)
            json.dump(state.as_dict(), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def read_state(state_dir: Path) -> DaemonState | None:
    try:
        raw = json.loads(state_path(state_dir).read_text(encoding="utf-8"))
        return DaemonState(
            port=int(raw["port"]),
            token=str(raw["token"]),
            pid=int(raw["pid"]),
            version=str(raw.get("version", "")),
            started_at=float(raw.get("started_at", 0.0)),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_state(state_dir: Path, token: str | None = None) -> None:
    """Remove the state file; with `token`, only when it is still ours (a successor may own it)."""
    path = state_path(state_dir)
    if token is not None:
        current = read_state(state_dir)
        if current is not None and current.token != token:
            return
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def probe_health(state: DaemonState, timeout: float = 2.0) -> dict[str, Any] | None:
    """GET /health with the token; the parsed body when the daemon answers 200, else None."""
    conn = http.client.HTTPConnection("127.0.0.1", state.port, timeout=timeout)
    try:
        conn.request("GET", "/health", headers={"Authorization": f"Bearer {state.token}"})
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            return None
        data = json.loads(body)
        return data if isinstance(data, dict) and data.get("ok") else None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()


class LifetimeLock:
    """An exclusive, non-blocking lock on `state_dir/daemon.lock`, held until `release()`."""

    def __init__(self, state_dir: Path):
        self.path = state_dir / LOCK_FILE
        self._handle: IO[str] | None = None

    def try_acquire(self) -> bool:
        ensure_private_dir(self.path.parent)
        handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the daemon's life
        try:
            _lock(handle)
        except OSError:
            handle.close()
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle
        return True

    def release(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                _unlock(self._handle)
            self._handle.close()
            self._handle = None


if os.name == "nt":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(handle: IO[str]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)

    def _unlock(handle: IO[str]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(handle: IO[str]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(handle: IO[str]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
