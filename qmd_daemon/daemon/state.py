"""The state file (`{port, token, pid, version, started_at, schema, code}`, mode 0600, written atomically) and
the lifetime lock that makes "one daemon per home" hold even when many clients start one at once.

The lock (`qmd_daemon.locks`: flock on POSIX, msvcrt on Windows) is held for the daemon's whole
life: the kernel drops it when the process dies (kill -9 included), so a state file whose lock is
free is stale by definition.

The state file's port can outlive the daemon and be taken by any program, so nobody sends the token
to it before the peer proves it holds the token (`daemon_proof`, GET /challenge; docs/security.md).
"""

from __future__ import annotations

import contextlib
import hmac
import http.client
import json
import os
import re
import secrets
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

import qmd_daemon
from clients._qmd_client import LOCK_FILE, MAX_CHALLENGE_BYTES, PROOF_LABEL, STATE_FILE
from qmd_daemon.atomic_files import replace_file
from qmd_daemon.locks import file_lock

# The file names, the proof's label and the challenge's size cap come from the clients' side
# (clients/_qmd_client.py is stdlib only and cannot import these): one copy for both ends. The
# proof is computed there by _proof_ok, here by daemon_proof. PROOF_LABEL names the direction: the
# daemon proves itself to a client and never accepts such a proof from anyone, so an answer a
# stranger collects is worth nothing against the daemon; the port binds it to the daemon's own
# socket, so a stranger cannot relay a client's nonce to another daemon's port.
NONCE = re.compile(r"[0-9a-f]{32,128}")
LOCK_RETRY_S = 0.5  # a client tests the lock with a brief shared lock (_qmd_client.daemon_lock_held)


@dataclass(frozen=True)
class DaemonState:
    port: int
    token: str
    pid: int
    version: str
    started_at: float
    # the index schema this daemon's code maintains: a client whose code maintains a newer one
    # replaces the daemon (a `pip install -U` while it ran; _qmd_client.INDEX_SCHEMA)
    schema: int = 0
    # the package file this daemon's code was loaded from, as it was when the daemon started
    # (`code_stamp`): a `pip install -U` rewrites it, and a client that finds it changed on disk
    # replaces the daemon (_qmd_client.code_replaced), also when the schema stayed the same
    code: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def code_stamp() -> dict[str, Any] | None:
    """`{file, mtime_ns, size}` of the package's __init__.py, which every install rewrites (pip
    writes each file of a wheel anew), as an absolute path (a client checks it from another
    folder); None when it cannot be read."""
    try:
        path = os.path.abspath(qmd_daemon.__file__ or "")
        found = os.stat(path)
    except (OSError, TypeError):  # TypeError: a namespace package has no __file__
        return None
    return {"file": path, "mtime_ns": found.st_mtime_ns, "size": found.st_size}


# taken as the daemon's code is imported, not when it starts serving: an install landing between
# the two would leave old code stamped as new, never replaced
LOADED_CODE = code_stamp()


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
    replace_file(target, json.dumps(state.as_dict()), durable=True)
    return target


def read_state(state_dir: Path) -> DaemonState | None:
    """The state file, or None when no daemon could have written it: the clients' rule
    (clients/_qmd_client.read_state), so `serve`, `stop` and `status` see the same daemon as
    `ai-search` (a port past 65535 raised OverflowError out of a connect here)."""
    try:
        raw = json.loads(state_path(state_dir).read_text(encoding="utf-8"))
        port, pid = raw["port"], raw["pid"]
        if type(port) is not int or not 0 < port < 65536 or type(pid) is not int:
            return None
        if not isinstance(raw["token"], str):
            return None
        return DaemonState(
            port=int(raw["port"]),
            token=str(raw["token"]),
            pid=int(raw["pid"]),
            version=str(raw.get("version", "")),
            started_at=float(raw.get("started_at", 0.0)),
            schema=int(raw.get("schema", 0)),
            code=raw.get("code") if isinstance(raw.get("code"), dict) else None,
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


def daemon_proof(token: str, port: int, nonce: str) -> str:
    """The answer to a client's nonce: HMAC-SHA256 over the direction label, the port and the nonce."""
    message = b"%s|%d|%s" % (PROOF_LABEL, port, nonce.encode("ascii"))
    return hmac.new(token.encode("utf-8"), message, "sha256").hexdigest()


class _DeadlineSocket(socket.socket):
    """A socket whose every read waits only for what is left of one deadline: http.client's
    timeout is per read, so a peer that drips a byte at a time would hold a probe for minutes."""

    deadline = 0.0

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self.settimeout(left)
        return super().recv_into(buffer, nbytes, flags)


def _deadline_connection(port: int, timeout: float) -> http.client.HTTPConnection:
    """An HTTP connection to the loopback `port` that is done within `timeout` seconds in all."""
    plain = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock = _DeadlineSocket(fileno=plain.detach())
    sock.deadline = time.monotonic() + timeout
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.sock = sock
    return conn


def request_verified(
    state: DaemonState, method: str, path: str, body: bytes | None = None, timeout: float = 2.0
) -> tuple[int, bytes] | None:
    """One request with the token, on a connection whose peer first proved it holds the token
    (GET /challenge), all within `timeout`; None when the peer cannot prove it or does not answer
    in time: a stranger on a stale port gets a nonce and nothing else, a slow one no more time."""
    nonce = secrets.token_hex(16)
    try:
        conn = _deadline_connection(state.port, timeout)
    except OSError:
        return None
    try:
        conn.request("GET", f"/challenge?nonce={nonce}")
        response = conn.getresponse()
        if response.status != 200 or response.length is None or response.length > MAX_CHALLENGE_BYTES:
            return None
        given = json.loads(response.read()).get("proof")
        wanted = daemon_proof(state.token, state.port, nonce)
        if not isinstance(given, str) or not hmac.compare_digest(wanted.encode(), given.encode()):
            return None
        headers = {"Authorization": f"Bearer {state.token}", "Content-Type": "application/json"}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, ValueError, AttributeError, UnicodeError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def health_body(state: DaemonState, timeout: float = 2.0) -> dict[str, Any] | None:
    """The JSON object the daemon that wrote `state` answers /health with (200) within `timeout`,
    else None: the one reading of it for the liveness probe and `status`'s jobs."""
    answer = request_verified(state, "GET", "/health", timeout=timeout)
    if answer is None or answer[0] != 200:
        return None
    try:
        data = json.loads(answer[1])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def probe_health(state: DaemonState, timeout: float = 2.0) -> dict[str, Any] | None:
    """The /health body when the daemon that wrote `state` answers it, healthy, within `timeout`."""
    data = health_body(state, timeout)
    return data if data is not None and data.get("ok") else None


class LifetimeLock:
    """An exclusive, non-blocking lock on `state_dir/daemon.lock` (holding the daemon's pid), held
    until `release()`: a second daemon's try fails at once, so it knows the first one is alive."""

    def __init__(self, state_dir: Path):
        self.path = state_dir / LOCK_FILE
        self._lock: FileLock | None = None

    def try_acquire(self) -> bool:
        """False when another daemon holds it; a client's momentary test of it is waited out."""
        ensure_private_dir(self.path.parent)
        lock = file_lock(self.path)
        try:
            lock.acquire(timeout=LOCK_RETRY_S, poll_interval=0.02)
        except Timeout:
            return False
        self._lock = lock
        return True

    def release(self) -> None:
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.release()
            self._lock = None
