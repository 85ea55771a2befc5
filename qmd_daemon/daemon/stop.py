"""`qmd-daemon stop`: POST /shutdown with the token from the state file (once the peer proved it
holds the token: a stranger on a stale port learns nothing), then wait until the
daemon has let go of its lifetime lock (held until its index is closed; the kernel drops it when
the process ends), so that whatever runs next finds the index free."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from qmd_daemon.daemon.state import DaemonState, LifetimeLock, health_body, read_state, request_verified
from qmd_daemon.errors import QmdError


def _lock_free(state_dir: Path) -> bool:
    lock = LifetimeLock(state_dir)
    if not lock.try_acquire():
        return False
    lock.release()
    return True


def running_daemon(state_dir: Path) -> DaemonState | None:
    """The state file of the daemon that holds the lifetime lock, None when none runs (a state
    file left by a dead one is not a running daemon)."""
    return None if _lock_free(state_dir) else read_state(state_dir)


def daemon_jobs(state: DaemonState, timeout: float = 2.0) -> dict[str, Any] | None:
    """What the running daemon's writer is doing (/health's `jobs`: the running job, an embed owed
    to another process's lock), for `status`; None when it does not answer in time."""
    jobs = (health_body(state, timeout) or {}).get("jobs")
    return jobs if isinstance(jobs, dict) else None


def stop_daemon(state_dir: Path, timeout: float = 30.0) -> int | None:
    """The stopped daemon's pid, or None when none was running; QmdError when it would not stop."""
    if _lock_free(state_dir):
        return None  # no daemon holds the lock: any state file left is stale
    state = read_state(state_dir)
    answer = request_verified(state, "POST", "/shutdown", b"{}", timeout=5.0) if state else None
    if state is None or answer is None or answer[0] != 200:
        raise QmdError(f"a daemon holds {state_dir / 'daemon.lock'} but does not answer /shutdown; "
                       "end that process (its pid is in the lock file)")
    deadline = time.monotonic() + timeout
    while not _lock_free(state_dir):
        if time.monotonic() > deadline:
            raise QmdError(f"the daemon (pid {state.pid}) accepted /shutdown but is still running "
                           f"after {timeout:g} s; it finishes a running job first, try again")
        time.sleep(0.1)
    return state.pid
