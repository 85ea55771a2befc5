"""The adversarial set, end to end, in a fresh QMD_DAEMON_HOME: what an attacker or an unlucky user
throws at qmd-daemon, and whether the index comes out whole.

    python bench/adversarial.py [--files 1500] [--skip disk_full] [--json OUT]

Sections (each prints its counts; the last line sums them):

  bad_requests   malformed HTTP and JSON bodies against a live daemon: each must get a 4xx (never a
                 5xx or a dropped connection) and the daemon must stay healthy
  slow_query     a 900,000-character query: /health must keep answering (max latency printed) and
                 the query must come back in seconds
  load           eight clients searching at once while a refresh job writes: every request answered
  odd_files      binaries, NULs, invalid UTF-8, huge, unreadable, FIFOs, symlink loops, a symlinked
                 folder leading to a secret outside the root: `update` completes, the secret is never
                 indexed
  stranger       the daemon is killed -9 and a stranger binds its port: ai-search must send it no
                 token and no query, and still answer (from a fresh daemon or in-process)
  repo_programs  a git filter configured by the repository: ai-search and update must never run it
  kill9          `update` killed -9 at 20%, 40% and 60% of its run: the previous index stays
                 searchable and the next update completes
  writers        a running daemon plus two concurrent CLI updates of one collection: all succeed
  disk_full      the index on a 3 MB tmpfs (root only): a one-line error naming the cause, the
                 previous index still searchable afterwards

`data lost` counts every time a sentinel that was indexed before a fault could not be found after
it; it must be 0. Run as root for disk_full (it mounts a tmpfs); elsewhere that section says it did
not run.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from clients._qmd_client import MAX_REQUEST_BYTES  # noqa: E402
from qmd_daemon.setup.installer import process_alive  # noqa: E402

CLIENTS = ROOT / "clients"
CLI_MAIN = "import sys; from qmd_daemon.cli import main; sys.argv[0] = 'qmd-daemon'; main()"
SENTINEL = "zqxsentinelword"  # one word, indexed before every fault, searched after it
SECRET = "zqxoauthsecretvalue"  # lives outside the collection; must never be found


@dataclass
class Tally:
    """One section's counts."""

    name: str
    tried: int = 0
    survived: int = 0
    kind: str = "requests"  # requests | faults | inputs
    data_lost: int = 0
    notes: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str) -> None:
        self.tried += 1
        self.survived += ok
        if not ok:
            self.notes.append(what)

    def kept_sentinel(self, lab: Lab, what: str) -> None:
        """After a fault: the sentinel still found, else a failed check and data lost."""
        found = lab.finds(SENTINEL)
        self.data_lost += not found
        self.check(found, what)


class Lab:
    """A temp home, a repository with a sentinel, and the commands a user runs against them."""

    def __init__(self, base: Path, files: int) -> None:
        self.base = base
        self.home = base / "home"
        self.repo = base / "repo"
        self.files = files
        self.env = dict(os.environ, QMD_DAEMON_HOME=str(self.home), QMD_PRELOAD="0", HF_HUB_OFFLINE="1")
        for var in ("QMD_CONFIG_DIR", "QMD_INDEX_PATH", "QMD_NO_DAEMON", "QMD_IDLE_MINUTES"):
            self.env.pop(var, None)

    def make_repo(self) -> None:
        src = self.repo / "src"
        src.mkdir(parents=True)
        (self.base / "a-file.txt").write_text("not a folder\n")
        (src / "sentinel.py").write_text(f"def {SENTINEL}():\n    return 'kept across every fault'\n")
        body = "".join(
            f"def handler_{i}(request):\n    return request.get('field_{i}')\n\n" for i in range(30)
        )
        for i in range(self.files):
            (src / f"module_{i:05d}.py").write_text(f"# module {i}\n{body}")
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("-c", "user.email=a@b", "-c", "user.name=bench", "commit", "-qm", "init")

    def git(self, *args: str) -> None:
        subprocess.run(["git", "-C", str(self.repo), *args], check=True, capture_output=True)

    def cli(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", CLI_MAIN, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def popen_cli(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", CLI_MAIN, *args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def ai_search(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(CLIENTS / "ai_search.py"), *args, "--json"],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def finds(self, word: str) -> bool:
        proc = self.cli("search", word, "--json", "--no-vectors")
        try:
            return any(word in hit.get("snippet", "") for hit in json.loads(proc.stdout))
        except ValueError:
            return False

    def state(self) -> dict[str, Any] | None:
        with contextlib.suppress(OSError, ValueError):
            return json.loads((self.home / "state" / "daemon.json").read_text())
        return None

    def start_daemon(self) -> dict[str, Any]:
        subprocess.Popen(
            [sys.executable, "-m", "qmd_daemon.daemon", "serve"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            state = self.state()
            if state and _request(state, "GET", "/health", timeout=2)[0] == 200:
                return state
            time.sleep(0.1)
        raise RuntimeError("the daemon did not start within 60 s")

    def stop_daemon(self) -> None:
        state = self.state()
        if state:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(state["pid"]), signal.SIGTERM)
            _wait(lambda: not _alive(int(state["pid"])), 20)


def _alive(pid: int) -> bool:
    """Running and not a zombie (the daemon is a grandchild: /proc tells)."""
    if not process_alive(pid):
        return False
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    return True


def _wait(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _request(
    state: dict[str, Any],
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
    token: bool = True,
) -> tuple[int, bytes]:
    """One request; status 0 when the connection broke."""
    conn = http.client.HTTPConnection("127.0.0.1", int(state["port"]), timeout=timeout)
    sent = {"Content-Type": "application/json", **(headers or {})}
    if token:
        sent["Authorization"] = f"Bearer {state['token']}"
    try:
        conn.request(method, path, body=body, headers=sent)
        resp = conn.getresponse()
        return resp.status, resp.read()
    except (OSError, http.client.HTTPException):
        return 0, b""
    finally:
        conn.close()


def _raw(state: dict[str, Any], data: bytes, timeout: float = 10) -> bytes:
    """Bytes straight onto the socket, for requests http.client refuses to write."""
    with socket.create_connection(("127.0.0.1", int(state["port"])), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


def _bodies(repo: Path) -> list[tuple[str, bytes]]:
    deep = b"[" * 100_000 + b"]" * 100_000
    return [
        ("empty body", b""),
        ("not json", b"{query: 1"),
        ("json list", b"[1, 2]"),
        ("json string", b'"query"'),
        ("query missing", b"{}"),
        ("query null", b'{"query": null}'),
        ("query number", b'{"query": 5}'),
        ("query blank", b'{"query": "   "}'),
        ("query object", b'{"query": {"a": 1}}'),
        ("limit string", b'{"query": "x", "limit": "ten"}'),
        ("limit huge", b'{"query": "x", "limit": 10000000000000000000000}'),
        ("limit negative", b'{"query": "x", "limit": -1}'),
        ("limit nan", b'{"query": "x", "limit": NaN}'),
        ("limit infinity", b'{"query": "x", "limit": Infinity}'),
        ("min_score 2", b'{"query": "x", "min_score": 2}'),
        ("budget negative", b'{"query": "x", "budget_ms": -5}'),
        ("collections not list", b'{"query": "x", "collections": "a"}'),
        ("collections of numbers", b'{"query": "x", "collections": [1, 2]}'),
        ("unknown collection", b'{"query": "x", "collection": "no-such-collection"}'),
        ("relative path", b'{"query": "x", "path": "relative/dir"}'),
        ("path NUL", json.dumps({"query": "x", "path": "/tmp/a\u0000b"}).encode()),
        ("path ~nosuchuser", b'{"query": "x", "path": "~nosuchuserzq/repo"}'),
        ("path 5000 chars", json.dumps({"query": "x", "path": "/" + "a" * 5000}).encode()),
        ("path missing folder", json.dumps({"query": "x", "path": str(repo.parent / "nope")}).encode()),
        ("path is a file", json.dumps({"query": "x", "path": str(repo.parent / "a-file.txt")}).encode()),
        ("invalid utf-8", b'{"query": "\xff\xfe"}'),
        ("deep nesting", b'{"query": "x", "extra": ' + deep + b"}"),
        ("wait string", b'{"query": "x", "wait": "soon"}'),
        ("refresh object", b'{"query": "x", "refresh": {"a": 1}}'),
        ("rerank_candidates huge", b'{"query": "x", "rerank_candidates": 99999}'),
        ("per_file -3", b'{"query": "x", "per_file": -3}'),
        ("max_tokens float", b'{"query": "x", "max_tokens": 1.5}'),
    ]


def bad_requests(lab: Lab, state: dict[str, Any]) -> Tally:
    tally = Tally("bad_requests", kind="inputs")
    for what, body in _bodies(lab.repo):
        status, _ = _request(state, "POST", "/search", body)
        tally.check(400 <= status < 500, f"{what}: HTTP {status}")
    for what, (method, path, body) in {
        "refresh with bad path": ("POST", "/refresh", b'{"path": "\\u0000"}'),
        "embed with bad collections": ("POST", "/embed", b'{"collections": 7}'),
        "unknown job": ("GET", "/jobs/does-not-exist", None),
        "unknown endpoint": ("GET", "/etc/passwd", None),
        "wrong method": ("DELETE", "/search", None),
    }.items():
        status, _ = _request(state, method, path, body)
        tally.check(400 <= status < 500, f"{what}: HTTP {status}")
    for what, headers, use_token in [
        ("no token", {}, False),
        ("wrong token", {"Authorization": "Bearer nope"}, False),
        ("foreign Host", {"Host": "evil.example"}, True),
        ("foreign Origin", {"Origin": "http://evil.example"}, True),
    ]:
        status, _ = _request(state, "GET", "/status", headers=headers, token=use_token)
        tally.check(status in (401, 403), f"{what}: HTTP {status}")
    # past the daemon's cap (a 1,000,000-character query with every character escaped fits under it)
    big = b'{"query": "' + b"a" * (MAX_REQUEST_BYTES + (1 << 20)) + b'"}'
    status, _ = _request(state, "POST", "/search", big)
    tally.check(status == 413 or 400 <= status < 500, f"{len(big) >> 20} MB body: HTTP {status}")
    for what, data in [
        ("garbage bytes", b"\x00\x01\x02 not http\r\n\r\n"),
        ("header without end", b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * 70000),
        ("bad content-length", b"POST /search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n"),
    ]:
        reply = _raw(state, data)
        tally.check(not reply.startswith(b"HTTP/1.1 5") and not reply.startswith(b"HTTP/1.0 5"), what)
    healthy = _request(state, "GET", "/health")[0] == 200
    tally.check(healthy, "daemon unhealthy after the bad requests")
    return tally


def slow_query(lab: Lab, state: dict[str, Any]) -> Tally:
    tally = Tally("slow_query")
    body = json.dumps({"query": "a" * 900_000, "path": str(lab.repo)}).encode()
    result: dict[str, Any] = {}

    def ask() -> None:
        started = time.perf_counter()
        result["status"] = _request(state, "POST", "/search", body, timeout=300)[0]
        result["seconds"] = time.perf_counter() - started

    worker = threading.Thread(target=ask)
    worker.start()
    worst = 0.0
    while worker.is_alive():
        started = time.perf_counter()
        status = _request(state, "GET", "/health", timeout=30)[0]
        worst = max(worst, time.perf_counter() - started)
        tally.check(status == 200, f"/health HTTP {status} during the long query")
        time.sleep(0.05)
    worker.join()
    tally.check(worst < 0.1, f"/health took {worst * 1000:.0f} ms during the long query")
    seconds = result.get("seconds", float("inf"))
    tally.check(
        result.get("status") == 200 and seconds < 30,
        f"the long query: HTTP {result.get('status')} in {seconds:.1f} s",
    )
    tally.notes.append(f"long query {seconds:.1f} s, worst /health {worst * 1000:.0f} ms")
    return tally


def odd_files(lab: Lab) -> Tally:
    tally = Tally("odd_files", kind="inputs")
    odd = lab.repo / "odd"
    odd.mkdir()
    secret = lab.base / "outside" / "gh"
    secret.mkdir(parents=True)
    (secret / "hosts.yml").write_text(f"github.com:\n  oauth_token: {SECRET}\n")
    (lab.base / "outside" / "secret.py").write_text(f"TOKEN = '{SECRET}'\n")
    (odd / "nul.py").write_bytes(b"def a():\n    return 1\x00\x00\x00\n")
    (odd / "binary.py").write_bytes(os.urandom(4096))
    (odd / "latin1.py").write_bytes("caf\xe9 = 'cr\xe8me'\n".encode("latin-1"))
    (odd / "bom16.py").write_bytes("x = 1\n".encode("utf-16"))
    (odd / "huge.py").write_text("x = 1\n" * 2_000_000)
    (odd / "empty.py").write_text("")
    (odd / "long_line.js").write_text("var a=" + "1+" * 200_000 + "1;\n")
    (odd / "deep" / "a" / "b" / "c" / "d" / "e").mkdir(parents=True)
    (odd / "deep" / "a" / "b" / "c" / "d" / "e" / "f.py").write_text("def deep():\n    pass\n")
    (odd / "loop").symlink_to(odd, target_is_directory=True)
    (odd / "dangling.py").symlink_to(lab.base / "nowhere.py")
    (odd / "escape.py").symlink_to(lab.base / "outside" / "secret.py")
    os.mkfifo(odd / "fifo.py")
    with contextlib.suppress(OSError):
        (odd / b"name-\xff.py".decode("utf-8", "surrogateescape")).write_text(
            "def undecodable():\n    pass\n"
        )
    unreadable = odd / "locked"
    unreadable.mkdir()
    (unreadable / "b.py").write_text("def locked():\n    pass\n")
    unreadable.chmod(0)
    lab.git("add", "-A")
    lab.git("-c", "user.email=a@b", "-c", "user.name=bench", "commit", "-qm", "odd")
    # a tracked folder replaced by a symlink to a credentials folder (the gh/hosts.yml case)
    (lab.repo / "gh").mkdir()
    (lab.repo / "gh" / "hosts.yml").write_text("github.com: {}\n")
    lab.git("add", "-A")
    lab.git("-c", "user.email=a@b", "-c", "user.name=bench", "commit", "-qm", "gh")
    shutil.rmtree(lab.repo / "gh")
    (lab.repo / "gh").symlink_to(secret, target_is_directory=True)
    proc = lab.cli("update")
    unreadable.chmod(0o755)
    tally.tried += 14  # the odd files above, each an input
    tally.survived += 14 if proc.returncode == 0 and "Traceback" not in proc.stderr else 0
    if proc.returncode != 0 or "Traceback" in proc.stderr:
        tally.notes.append(f"update over odd files: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    tally.check(not lab.finds(SECRET), "a secret outside the root was indexed")
    tally.kept_sentinel(lab, "the sentinel was lost")
    tally.check(lab.finds("deep"), "a nested file was not indexed")
    return tally


class Stranger(threading.Thread):
    """Listens on a port and records whatever arrives; answers like a server that knows no token."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # the kernel may close a killed process's listening socket a moment after the process is
        # reaped: retry the port for a few seconds
        deadline = time.monotonic() + 5
        while True:
            try:
                self.sock.bind(("127.0.0.1", port))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.received = b""
        self.stop = False

    def run(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                with contextlib.suppress(OSError):
                    self.received += conn.recv(65536)
                fake = b'{"ok": true, "hits": [{"path": "FAKE.py", "line": 1, "score": 1, "snippet": "x"}]}'
                with contextlib.suppress(OSError):
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                        + str(len(fake)).encode()
                        + b"\r\n\r\n"
                        + fake
                    )

    def close(self) -> None:
        self.stop = True
        self.join(5)
        self.sock.close()


def stranger(lab: Lab) -> Tally:
    tally = Tally("stranger", kind="faults")
    state = lab.start_daemon()
    os.kill(int(state["pid"]), signal.SIGKILL)
    _wait(lambda: not _alive(int(state["pid"])), 10)
    listener = Stranger(int(state["port"]))
    listener.start()
    started = time.perf_counter()
    try:
        proc = lab.ai_search(SENTINEL)
    finally:
        listener.close()
    seconds = time.perf_counter() - started
    token = str(state["token"]).encode()
    tally.check(token not in listener.received, "the stranger received the token")
    tally.check(SENTINEL.encode() not in listener.received, "the stranger received the query")
    tally.check(str(lab.repo).encode() not in listener.received, "the stranger received the repository path")
    tally.check(b"FAKE.py" not in proc.stdout.encode(), "ai-search printed the stranger's hits")
    tally.check(
        proc.returncode == 0 and SENTINEL in proc.stdout, f"ai-search did not answer: {proc.stderr[-200:]}"
    )
    tally.check(seconds < 30, f"ai-search took {seconds:.1f} s past the stranger")
    tally.notes.append(f"ai-search past a stranger: {seconds:.1f} s")
    lab.stop_daemon()
    return tally


def repo_programs(lab: Lab) -> Tally:
    tally = Tally("repo_programs", kind="faults")
    marker = lab.base / "filter-ran"
    script = lab.base / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)
    lab.git("config", "filter.evil.clean", str(script))
    lab.git("config", "filter.evil.smudge", str(script))
    lab.git("config", "diff.evil.textconv", str(script))
    (lab.repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    with (lab.repo / "src" / "sentinel.py").open("a") as handle:
        handle.write("# edited\n")
    proc = lab.ai_search(SENTINEL)
    tally.check(proc.returncode == 0, f"ai-search failed: {proc.stderr[-200:]}")
    tally.check(not marker.exists(), "ai-search ran a filter the repository configured")
    marker.unlink(missing_ok=True)
    lab.cli("update")
    tally.check(not marker.exists(), "update ran a filter the repository configured")
    warm = subprocess.run(
        [sys.executable, str(CLIENTS / "qmd_warm.py")],
        cwd=lab.repo,
        env=lab.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    time.sleep(1)
    tally.check(
        warm.returncode == 0 and not marker.exists(), "qmd-warm ran a filter the repository configured"
    )
    (lab.repo / ".gitattributes").unlink()
    lab.stop_daemon()
    return tally


def _edit_half(lab: Lab, tag: str) -> None:
    for path in sorted((lab.repo / "src").glob("module_*.py"))[: lab.files // 2]:
        path.write_text(path.read_text() + f"\ndef added_{tag}():\n    return 1\n")


def kill9(lab: Lab) -> Tally:
    """Kills at 20%, 40% and 60% of the time an update of the same size takes, so every kill
    lands inside the work whatever this machine's speed."""
    tally = Tally("kill9", kind="faults")
    _edit_half(lab, "timing")
    started = time.perf_counter()
    lab.cli("update")
    full = time.perf_counter() - started
    for round_, fraction in enumerate((0.2, 0.4, 0.6)):
        _edit_half(lab, f"r{round_}")
        proc = lab.popen_cli("update")
        time.sleep(full * fraction)
        killed = proc.poll() is None
        if killed:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        tally.kept_sentinel(
            lab, f"kill at {fraction:.0%}: the previous index was not searchable after kill -9"
        )
        after = lab.cli("update")
        tally.check(
            after.returncode == 0, f"kill at {fraction:.0%}: the next update failed: {after.stderr[-200:]}"
        )
        if not killed:
            tally.notes.append(f"kill at {fraction:.0%}: update finished first (full update {full:.1f} s)")
    return tally


def load(lab: Lab, state: dict[str, Any]) -> Tally:
    """Eight clients searching at once while a refresh job writes: every request answered 200."""
    tally = Tally("load")
    body = json.dumps({"query": "handler request field", "path": str(lab.repo), "limit": 5}).encode()
    results: list[int] = []
    lock = threading.Lock()

    def client() -> None:
        for _ in range(25):
            status = _request(state, "POST", "/search", body, timeout=60)[0]
            with lock:
                results.append(status)

    _edit_half(lab, "load")
    _request(state, "POST", "/refresh", json.dumps({"path": str(lab.repo)}).encode())
    threads = [threading.Thread(target=client) for _ in range(8)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    for status in results:
        tally.check(status == 200, f"a search under load: HTTP {status}")
    tally.notes.append(f"{len(results)} searches from 8 clients in {seconds:.1f} s during a refresh")
    return tally


def writers(lab: Lab) -> Tally:
    tally = Tally("writers", kind="faults")
    state = lab.start_daemon()
    for path in (lab.repo / "src").glob("module_*.py"):
        path.write_text(path.read_text() + "\ndef writers_round():\n    return 1\n")
    procs = [lab.popen_cli("update") for _ in range(2)]
    _request(state, "POST", "/refresh", json.dumps({"path": str(lab.repo)}).encode())
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        tally.check(proc.returncode == 0, f"a concurrent update failed: {err.strip()[-200:]}")
    deadline = time.monotonic() + 300
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        code, raw = _request(state, "GET", "/status")
        status = json.loads(raw) if code == 200 else {}
        if not status.get("jobs", {}).get("running"):
            break
        time.sleep(0.5)
    failed = [j for j in status.get("jobs", {}).get("recent", []) if j.get("state") == "failed"]
    tally.check(not failed, f"a daemon job failed: {failed[:1]}")
    tally.kept_sentinel(lab, "the sentinel was lost")
    lab.stop_daemon()
    return tally


def disk_full(lab: Lab) -> Tally:
    tally = Tally("disk_full", kind="faults")
    mount = lab.base / "small"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True, check=False
        ).returncode
    ):
        tally.notes.append("not run: mounting a tmpfs needs root")
        return tally
    try:
        small = Lab(lab.base / "small-lab", files=5)
        small.env["QMD_INDEX_PATH"] = str(mount / "index.sqlite")
        small.make_repo()
        first = small.cli("collection", "add", str(small.repo))
        tally.check(first.returncode == 0, f"the first index did not fit: {first.stderr[-200:]}")
        filler = "".join(f"def filler_{i}(x):\n    return x + {i}\n" for i in range(400))
        for i in range(200):
            (small.repo / "src" / f"big_{i}.py").write_text(filler)
        proc = small.cli("update")
        line = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
        tally.check(
            proc.returncode != 0 and "Traceback" not in proc.stderr,
            "update on a full disk did not fail cleanly",
        )
        tally.check(
            "rollback" not in line and ("full" in line.lower() or "space" in line.lower()),
            f"the error does not name the cause: {line!r}",
        )
        tally.kept_sentinel(small, "the previous index was not searchable after the disk filled")
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)
    return tally


SECTIONS = (
    "bad_requests",
    "slow_query",
    "load",
    "odd_files",
    "stranger",
    "repo_programs",
    "kill9",
    "writers",
    "disk_full",
)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--files", type=int, default=1500, help="generated files (kill -9 needs a slow update)"
    )
    parser.add_argument("--skip", action="append", default=[], choices=SECTIONS)
    parser.add_argument("--json", help="write the tallies here")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="qmd-adversarial-"))
    lab = Lab(base, args.files)
    tallies: list[Tally] = []
    try:
        lab.make_repo()
        added = lab.cli("collection", "add", str(lab.repo))
        if added.returncode:
            print(f"collection add failed: {added.stderr.strip()}", file=sys.stderr)
            return 1
        wanted = [s for s in SECTIONS if s not in args.skip]
        live = ("bad_requests", "slow_query", "load")  # sections against one running daemon
        if set(live) & set(wanted):
            state = lab.start_daemon()
            for name in live:
                if name in wanted:
                    tallies.append(globals()[name](lab, state))
            lab.stop_daemon()
        for name in wanted:
            if name not in live:
                tallies.append(globals()[name](lab))
    finally:
        lab.stop_daemon()
        shutil.rmtree(base, ignore_errors=True)
    totals = {"requests": [0, 0], "faults": [0, 0], "inputs": [0, 0]}
    for t in tallies:
        totals[t.kind][0] += t.survived
        totals[t.kind][1] += t.tried
        print(
            f"{t.name:14} {t.survived}/{t.tried} {t.kind} survived"
            + (f"; data lost {t.data_lost}" if t.data_lost else "")
        )
        for note in t.notes:
            print(f"    {note}")
    lost = sum(t.data_lost for t in tallies)
    print(
        f"requests survived {totals['requests'][0]}/{totals['requests'][1]}, "
        f"faults survived {totals['faults'][0]}/{totals['faults'][1]}, "
        f"bad inputs tried {totals['inputs'][1]} ({totals['inputs'][0]} handled), data lost {lost}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps([t.__dict__ for t in tallies], indent=2))
    ok = lost == 0 and all(t.survived == t.tried for t in tallies)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
