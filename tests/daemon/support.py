"""Helpers shared by the daemon and client tests: real repositories, real processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qmd_daemon.daemon.jobs import Job, JobQueue
from qmd_daemon.setup.installer import process_alive
from qmd_daemon.vectorize import BATCH
from tests.conftest import SAMPLE_GO, SAMPLE_MD, SAMPLE_PY, write_tree

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENTS = REPO_ROOT / "clients"


def make_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    write_tree(
        root, files or {"src/client.py": SAMPLE_PY, "pool/pool.go": SAMPLE_GO, "docs/guide.md": SAMPLE_MD}
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, QMD_DAEMON_HOME=str(home), QMD_PRELOAD="0", HF_HUB_OFFLINE="1")
    for var in ("QMD_CONFIG_DIR", "QMD_INDEX_PATH", "QMD_NO_DAEMON", "QMD_IDLE_MINUTES"):
        env.pop(var, None)
    env.update(extra)
    return env


def run_client(
    script: str, *args: str, home: Path, cwd: Path, timeout: float = 90, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CLIENTS / script), *args],
        cwd=cwd,
        env=env_for(home, **extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def state_of(home: Path) -> dict[str, Any] | None:
    try:
        return json.loads((home / "state" / "daemon.json").read_text())
    except (OSError, ValueError):
        return None


def wait_for(predicate: Any, timeout: float = 20.0, step: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {predicate}")


def start_serve(home: Path, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "qmd_daemon.daemon", "serve"],
        env=env_for(home, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# A daemon in the lock's terms: it holds state/daemon.lock (its pid recorded) for `seconds`
# before it answers (a start loading a big index) or stops (an idle exit closing its jobs), then
# lets go and serves, or exits
_HOLD_LOCK = """
import sys, time
from qmd_daemon.daemon.server import serve_forever
from qmd_daemon.daemon.state import LifetimeLock
from qmd_daemon.settings import Settings
settings = Settings.from_env()
lock = LifetimeLock(settings.state_dir)
assert lock.try_acquire()
print("held", flush=True)
time.sleep(float(sys.argv[1]))
lock.release()
sys.exit(serve_forever(settings, out=lambda line: None) if sys.argv[2] == "serve" else 0)
"""


def hold_daemon_lock(home: Path, seconds: float, then: str) -> subprocess.Popen[str]:
    """A process holding the daemon's lock for `seconds`, then serving (`then="serve"`) or gone."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(seconds), then],
        env=env_for(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


# a name of its own: under _HOLD_LOCK's name it replaced the daemon-lock script above, and
# hold_daemon_lock took a lock file named after its seconds ("1.0") in the working folder instead
_HOLD_LOCK_FILE = (
    "import sys; from pathlib import Path; from qmd_daemon.locks import held_or_busy\n"
    "with held_or_busy(Path(sys.argv[1]), RuntimeError('busy')):\n"
    "    print('held', flush=True); sys.stdin.read()\n"
)


@contextlib.contextmanager
def lock_held_elsewhere(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock file `path` (as a terminal's `qmd-daemon embed` holds
    embed.lock or static.lock) until its stdin is closed (`communicate("")`) or the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK_FILE, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder
    finally:
        if holder.poll() is None:
            holder.communicate("")


@contextlib.contextmanager
def daemon_running(
    home: Path, script: str, *args: str, stderr: Any = subprocess.DEVNULL
) -> Iterator[subprocess.Popen[bytes]]:
    """SCRIPT (this code's daemon, changed before it starts: see its callers) serving HOME, once
    its state file names it; killed at the end if the test did not see it stop."""
    daemon = subprocess.Popen(
        [sys.executable, "-c", script, *args], env=env_for(home), stdout=subprocess.DEVNULL, stderr=stderr
    )
    try:
        wait_for(lambda: (state_of(home) or {}).get("pid") == daemon.pid, timeout=60)
        yield daemon
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()


def pid_running(pid: int) -> bool:
    """Alive and not a zombie of someone else's (a daemon is a grandchild: /proc tells)."""
    if not process_alive(pid):
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def is_our_daemon(pid: int, home: Path) -> bool:
    """A daemon this test started: its command line runs qmd_daemon, or its environment names this
    test's home (an older install's daemon runs a script of the test's own, `older_daemon.py`,
    which the command line alone missed: it outlived the suite until it idled out)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if b"qmd_daemon" in handle.read():
                return True
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return f"QMD_DAEMON_HOME={home}".encode() in handle.read().split(b"\0")
    except OSError:
        return False


def serves_of(home: Path) -> set[int]:
    """The pids of the `serve` processes of `home` (Linux: /proc; elsewhere none): the daemon, and
    any serve a client started that still waits on its lock."""
    found = set()
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in argv and f"QMD_DAEMON_HOME={home}".encode() in env:
            found.add(int(entry.name))
    return found


def stop_daemon(home: Path) -> None:
    """SIGTERM (then SIGKILL) the daemon recorded in this test's home: only ones we started; and
    a serve a client started that still waits on the daemon's lock: it would take over once the
    daemon stopped and outlive the suite until it idled out."""
    for attempt in range(3):
        pids = serves_of(home)
        if attempt and not pids:
            return
        _stop(home, pids)


def _stop(home: Path, pids: set[int]) -> None:
    state = state_of(home)
    if state:
        pids.add(int(state["pid"]))
    with contextlib.suppress(OSError, ValueError):
        pids.add(int((home / "state" / "daemon.lock").read_text().strip()))
    for pid in pids:
        if pid <= 0 or pid == os.getpid() or not pid_running(pid) or not is_our_daemon(pid, home):
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        try:
            wait_for(lambda p=pid: not pid_running(p), timeout=10)
        except AssertionError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


class Stranger:
    """A plain socket server on a port a dead daemon's state file names: what any program that
    took the port over would see. `silent`: accepts and reads, never answers (a hung process);
    otherwise it answers every request with a 200 that looks like the daemon's (fake hits and a
    made-up proof). `received` holds every byte sent to it; `held_s` how long each connection
    stayed open before the client gave up on it."""

    FAKE = {"ok": True, "proof": "0" * 64, "hits": [{"path": "FAKE.py", "line": 1, "collection": "x"}]}

    def __init__(self, silent: bool = False):
        import socket
        import threading

        self.silent = silent
        self._chunks: list[bytes] = []  # list.append is atomic across the handler threads
        self.held_s: list[float] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import threading

        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: Any) -> None:
        opened = time.monotonic()
        body = json.dumps(self.FAKE).encode()
        reply = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        with conn:
            conn.settimeout(120)
            try:
                while data := conn.recv(65536):
                    self._chunks.append(data)
                    if not self.silent and b"\r\n\r\n" in data:
                        conn.sendall(reply % (len(body), body))
            except OSError:
                pass
        self.held_s.append(time.monotonic() - opened)

    @property
    def received(self) -> bytes:
        return b"".join(self._chunks)

    def close(self) -> None:
        self._server.close()


async def running_embed(queue: JobQueue, names: list[str]) -> Job:
    """Start `queue` and an embed job of `names` on it; returned once the job runs (an event, not
    a sleep: its state changes on the loop)."""
    queue.start()
    embed = queue.submit("embed", names)
    while embed.state == "queued":
        await asyncio.sleep(0.01)
    return embed


def many_small_chunks(root: Path, chunks: int = 16 * BATCH, lines: int = 1) -> Path:
    """A tree of `chunks` one-function files of `lines` body lines: many embed batches (more than
    LOWERED_FROM chunks by default, so a job runs niced on its second instance) at a tenth of
    MiniLM's time for as many chunks of this repository's own source. Tests copied
    qmd_daemon/search instead: 25-39 s of embedding each, growing with the code, on a CI run near
    its time limit."""
    def body(i: int) -> str:
        steps = "".join(f"    value = value * {i} + {j}  # step {j} of part {i}\n" for j in range(lines))
        return f"def score_part_{i:03d}(value):\n{steps}    return value\n"

    return write_tree(root, {f"pkg/part_{i:03d}.py": body(i) for i in range(chunks)})
