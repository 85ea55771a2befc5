"""Several agents at once: the races between clients, the daemon, its jobs and the user's edits.

One run, on a fresh HOME (QMD_DAEMON_HOME in it), the `small` profile, a real daemon and three git
repositories copied from ~/.cache/qmd-eval/git-corpora. Bounded in count and time, loopback only:

  1 cold      N `qmd-warm` + `ai-search` started at once with no daemon: one daemon, every call
              answered (daemon or in-process), exit 0, no traceback, no "database is locked"
  2 churn     W workers x C `ai-search` while a script edits, creates, renames and deletes files and
              `git checkout -f` switches 100 files: how long an answer names a deleted file, and
              whether the index ends equal to a fresh `collection add` of the same tree
  3 idle      QMD_IDLE_MINUTES tiny (0: the 2 s floor, then 0.04) and calls timed around the exit
  4 kill      kill -9 of the daemon mid-refresh and mid-embed while searches run: next call answers,
              PRAGMA integrity_check, earlier content still found
  5 terminal  `qmd-daemon update` while the daemon refreshes the same collection; `collection remove`
              while searches in it run

    nice -n 10 python bench/soak.py [--models-dir .test-cache/models] [--calls 200] [--workers 4]
                                    [--processes 5] [--idle-rounds 12] [--kill-rounds 2] [--only 12345]

Prints each scenario's calls, failures, latencies (p50/max) and the load average; exit 1 on a failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qmd_daemon.daemon.server import MIN_IDLE_S

ROOT = Path(__file__).resolve().parents[1]
CORPORA = Path.home() / ".cache" / "qmd-eval" / "git-corpora"
REPOS = ("click", "cobra", "bats-core")  # copied into git repositories: a, b and c below
GIT = ["git", "-c", "user.email=soak@example.com", "-c", "user.name=soak", "-c", "commit.gpgsign=false"]
BAD_WORDS = ("Traceback", "database is locked")
QUERIES = ["parse command line options", "how are errors reported", "soak_marker_ident", "main entry point"]


@dataclass
class Call:
    rc: int
    wall: float
    stdout: str
    stderr: str
    started: float
    hits: list[dict[str, Any]] = field(default_factory=list)


def fallbacks(calls: list[Call]) -> str:
    """How many calls searched in-process, and why (the client's line, counted)."""
    why: dict[str, int] = {}
    for call in calls:
        found = re.search(r"daemon unavailable \((.*)\); searching in-process", call.stderr)
        if found:
            reason = re.sub(r"\d+", "N", found.group(1))
            why[reason] = why.get(reason, 0) + 1
    return f"{sum(why.values())} in-process{f' {why}' if why else ''}"


@dataclass
class Report:
    failures: list[str] = field(default_factory=list)

    def fail(self, scenario: str, message: str) -> None:
        self.failures.append(f"[{scenario}] {message}")
        print(f"  FAIL {message}", flush=True)


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def pcts(values: list[float]) -> str:
    if not values:
        return "n/a"
    return f"p50 {statistics.median(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms"


class Soak:
    def __init__(self, base: Path, models_dir: Path, report: Report):
        self.base, self.report = base, report
        self.home = base / "qmd"
        self.env = dict(os.environ, HOME=str(base), QMD_DAEMON_HOME=str(self.home), HF_HUB_OFFLINE="1")
        for var in (
            "QMD_CONFIG_DIR",
            "QMD_INDEX_PATH",
            "QMD_NO_DAEMON",
            "QMD_IDLE_MINUTES",
            "XDG_STATE_HOME",
        ):
            self.env.pop(var, None)
        self.env.update(
            QMD_DAEMON_PYTHON=sys.executable, PYTHONPATH=str(ROOT), QMD_MODELS_DIR=str(models_dir)
        )
        (self.home / "config").mkdir(parents=True)
        (self.home / "config" / "index.yml").write_text("models:\n  profile: small\n")

    # -- processes --------------------------------------------------------------------------------

    def search(self, repo: Path, query: str, timeout: float = 120, **extra: str) -> Call:
        argv = [sys.executable, str(ROOT / "clients" / "ai_search.py"), query, "--json", "-n", "5"]
        started = time.monotonic()
        try:
            proc = subprocess.run(
                argv, cwd=repo, env=dict(self.env, **extra), capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired as exc:
            return Call(124, time.monotonic() - started, str(exc.stdout or ""), "timed out (hung)", started)
        call = Call(proc.returncode, time.monotonic() - started, proc.stdout, proc.stderr, started)
        try:
            call.hits = json.loads(proc.stdout) if proc.returncode == 0 else []
        except ValueError:
            call.rc = -1
        return call

    def warm(self, repo: Path, **extra: str) -> subprocess.Popen[bytes]:
        argv = [sys.executable, str(ROOT / "clients" / "qmd_warm.py")]
        return subprocess.Popen(argv, cwd=repo, env=dict(self.env, **extra))

    def cli(
        self, *args: str, timeout: float = 300, home: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = dict(self.env, QMD_DAEMON_HOME=str(home or self.home))
        return subprocess.run(
            [sys.executable, "-m", "qmd_daemon.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def check(self, scenario: str, call: Call, label: str) -> None:
        said = call.stderr  # stdout is the JSON hits: a snippet may quote a traceback
        if call.rc != 0:
            self.report.fail(scenario, f"{label}: exit {call.rc}: {call.stderr.strip()[-300:]}")
        for word in BAD_WORDS:
            if word in said:
                self.report.fail(scenario, f"{label}: '{word}' reached the user: {said.strip()[-300:]}")

    # -- the daemon -------------------------------------------------------------------------------

    @property
    def log_dir(self) -> Path:
        return self.home / "state" / "logs"

    def state(self) -> dict[str, Any] | None:
        try:
            return json.loads((self.home / "state" / "daemon.json").read_text())
        except (OSError, ValueError):
            return None

    def daemon_pids(self) -> list[int]:
        """Every daemon that ever listened in this home (daemon.log)."""
        try:
            text = (self.log_dir / "daemon.log").read_text(errors="replace")
        except OSError:
            return []
        return sorted(
            {int(p) for p in re.findall(r"qmd-daemon listening on 127\.0\.0\.1:\d+ \(pid (\d+)\)", text)}
        )

    def http(self, method: str, path: str, body: Any = None, timeout: float = 60) -> Any:
        sys.path.insert(0, str(ROOT / "clients"))
        import _qmd_client as qc

        os.environ["QMD_DAEMON_HOME"] = str(self.home)
        state = qc.read_state()
        if state is None:
            raise RuntimeError("no daemon state file")
        return qc.http(state, method, path, body, timeout)

    def wait_idle(self, timeout: float = 300, kinds: tuple[str, ...] = ("refresh",)) -> bool:
        """Until the daemon has no refresh running or queued (embedding may go on: it changes no
        file row); False when none answers or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                jobs = self.http("GET", "/status", timeout=60)["jobs"]
            except Exception:  # noqa: BLE001 - no daemon: nothing to wait for
                return False
            pending = [j for j in [jobs["running"], *jobs["queued"]] if j and j["kind"] in kinds]
            if not pending:
                return True
            time.sleep(0.5)
        return False

    def running(self, kind: str, timeout: float = 60) -> dict[str, Any] | None:
        """The daemon's running job once it is of `kind` (None when none was within `timeout`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.http("GET", "/status")["jobs"]["running"]
            if job and job["kind"] == kind:
                return dict(job)
            time.sleep(0.05)
        return None

    def stop_daemon(self) -> None:
        with_state = self.state()
        if with_state is None:
            return
        self.cli("stop", timeout=60)

    def index_paths(self, home: Path, collection: str) -> dict[str, str]:
        index = home / "cache" / "index.sqlite"
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=30) as db:
            rows = db.execute(
                "SELECT f.path, f.hash FROM files f JOIN collections c ON c.id = f.collection_id"
                " WHERE c.name = ?",
                (collection,),
            ).fetchall()
        return dict(rows)

    def integrity(self) -> str:
        with sqlite3.connect(
            f"file:{self.home / 'cache' / 'index.sqlite'}?mode=ro", uri=True, timeout=30
        ) as db:
            return str(db.execute("PRAGMA integrity_check").fetchone()[0])


# -- repositories ---------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, "-C", str(repo), *args], check=True, capture_output=True)


def make_repo(base: Path, name: str) -> Path:
    repo = base / "repos" / name
    shutil.copytree(CORPORA / name, repo, symlinks=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "copy")
    return repo


def make_branch(repo: Path, count: int = 100) -> list[str]:
    """Branch `soak-alt`: `count` tracked files, each with one more line; back on main after."""
    files = [
        p
        for p in subprocess.run(
            ["git", "-C", str(repo), "ls-files"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        if p.endswith((".py", ".go", ".md", ".rst", ".sh", ".bats", ".txt"))
    ][:count]
    git(repo, "checkout", "-q", "-b", "soak-alt")
    for rel in files:
        with open(repo / rel, "a", encoding="utf-8") as handle:
            handle.write("\n# soak_branch_line\n")
    git(repo, "commit", "-qam", "alt")
    git(repo, "checkout", "-q", "main")
    return files


# -- scenarios ------------------------------------------------------------------------------------


def cold(soak: Soak, repos: list[Path], n: int) -> None:
    print(f"\n1 cold: {n} processes at once (qmd-warm and ai-search), no daemon yet", flush=True)
    warms: list[subprocess.Popen[bytes]] = []
    with ThreadPoolExecutor(n) as pool:
        gate = threading.Barrier(n)

        def one(i: int) -> Call | None:
            repo = repos[i % len(repos)]
            gate.wait()
            if i % 2:
                warms.append(soak.warm(repo))
                return None
            return soak.search(repo, QUERIES[i % len(QUERIES)])

        calls = [c for c in pool.map(one, range(n)) if c is not None]
    for proc in warms:
        if proc.wait(timeout=30) != 0:
            soak.report.fail("cold", f"qmd-warm exit {proc.returncode}")
    for i, call in enumerate(calls):
        soak.check("cold", call, f"ai-search #{i}")
    # each detached warm reaches the daemon and logs its jobs (it then follows them to the end:
    # embedding takes minutes here, and the later scenarios run beside it)
    deadline = time.monotonic() + 120
    done: list[str] = []
    while time.monotonic() < deadline and len(done) < len(warms):
        warm_log = soak.log_dir / "warm.log"
        text = warm_log.read_text(errors="replace") if warm_log.exists() else ""
        done = re.findall(r": collection repo-\S+; jobs|already warming|qmd-warm failed.*", text)
        time.sleep(0.5)
    if len(done) < len(warms) or any("failed" in line for line in done):
        soak.report.fail("cold", f"qmd-warm: {done}")
    pids = soak.daemon_pids()
    if len(pids) != 1:
        soak.report.fail("cold", f"{len(pids)} daemons started: {pids}")
    print(
        f"  ai-search {len(calls)} ({fallbacks(calls)}), qmd-warm {len(warms)}; daemons started {len(pids)}; "
        f"warm {done}; {pcts([c.wall for c in calls])}; {load()}",
        flush=True,
    )


class Mutator(threading.Thread):
    """Edits, creates, renames and deletes files in `repo`, and switches branches every tenth step."""

    def __init__(self, repo: Path, stop: threading.Event):
        super().__init__(daemon=True)
        self.repo, self.stop = repo, stop
        self.deleted: dict[str, float] = {}  # relative path -> monotonic time it was deleted
        self.lock = threading.Lock()
        self.steps = self.checkouts = 0
        self.error: str | None = None

    def _gone(self, rel: str) -> None:
        with self.lock:
            self.deleted[rel] = time.monotonic()

    def run(self) -> None:
        rng = random.Random(7)
        live: list[str] = []
        tracked = [p for p in (self.repo / "src").rglob("*.py")] or list(self.repo.rglob("*.go"))
        try:
            while not self.stop.is_set():
                i = self.steps
                (self.repo / "soak").mkdir(exist_ok=True)
                rel = f"soak/soak_new_{i}.py"
                (self.repo / rel).write_text(f"def soak_marker_ident_{i}():\n    return {i}\n")
                live.append(rel)
                with self.lock:
                    self.deleted.pop(rel, None)
                target = rng.choice(tracked)
                with open(target, "a", encoding="utf-8") as handle:
                    handle.write(f"\n# soak edit {i}\n")
                if len(live) > 2:
                    old = live.pop(0)
                    new = f"soak/soak_renamed_{i}.py"
                    os.replace(self.repo / old, self.repo / new)
                    self._gone(old)
                    live.append(new)
                if len(live) > 4:
                    victim = live.pop(0)
                    os.unlink(self.repo / victim)
                    self._gone(victim)
                if i % 10 == 9:
                    branch = "soak-alt" if self.checkouts % 2 == 0 else "main"
                    git(self.repo, "checkout", "-q", "-f", branch)
                    self.checkouts += 1
                self.steps += 1
                time.sleep(0.15)
        except Exception as exc:  # noqa: BLE001 - said in the report
            self.error = f"{type(exc).__name__}: {exc}"


def churn(soak: Soak, repo: Path, calls: int, workers: int) -> None:
    print(
        f"\n2 churn: {workers} workers x {calls // workers} ai-search in {repo.name} while files change",
        flush=True,
    )
    stop = threading.Event()
    mutator = Mutator(repo, stop)
    mutator.start()
    lags: list[float] = []
    results: list[Call] = []
    seen = {"hits": 0, "soak files": 0, "gone at answer": 0}

    def worker(w: int) -> None:
        for k in range(calls // workers):
            call = soak.search(repo, QUERIES[(w + k) % len(QUERIES)])
            results.append(call)
            for hit in call.hits:
                path = str(hit.get("path"))
                seen["hits"] += 1
                seen["soak files"] += path.startswith("soak/")
                if not (repo / path).exists():
                    seen["gone at answer"] += 1  # deleted during the request, or before it
                    with mutator.lock:
                        gone = mutator.deleted.get(path)
                    # the file was deleted before the request began: the answer lagged by this much
                    if gone is not None and gone < call.started:
                        lags.append(call.started - gone)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(worker, range(workers)))
    stop.set()
    mutator.join(timeout=30)
    if mutator.error:
        soak.report.fail("churn", f"the mutator stopped: {mutator.error}")
    for i, call in enumerate(results):
        soak.check("churn", call, f"ai-search #{i}")
    # settle: one more search (its refresh takes in the last changes), then no job left
    soak.check("churn", soak.search(repo, "settle"), "settling search")
    soak.wait_idle()
    fresh_home = soak.base / "fresh"
    added = soak.cli("collection", "add", str(repo), home=fresh_home)
    if added.returncode != 0:
        soak.report.fail("churn", f"fresh collection add failed: {added.stderr.strip()[-300:]}")
    else:
        name = f"repo-{repo.name}"
        daemon_files, fresh_files = soak.index_paths(soak.home, name), soak.index_paths(fresh_home, name)
        missing, extra = set(fresh_files) - set(daemon_files), set(daemon_files) - set(fresh_files)
        differ = {p for p in set(fresh_files) & set(daemon_files) if fresh_files[p] != daemon_files[p]}
        if missing or extra or differ:
            soak.report.fail(
                "churn",
                f"index != fresh update: missing {sorted(missing)[:5]} ({len(missing)}), "
                f"extra {sorted(extra)[:5]} ({len(extra)}), content differs {sorted(differ)[:5]}",
            )
        print(
            f"  files: daemon {len(daemon_files)}, fresh {len(fresh_files)}, missing {len(missing)}, "
            f"extra {len(extra)}, differ {len(differ)}",
            flush=True,
        )
    stale = (
        f"{len(lags)} hits named a file deleted before the request (max lag {max(lags):.2f} s)"
        if lags
        else "no hit named a file deleted before its request"
    )
    print(
        f"  calls {len(results)} ({fallbacks(results)}), mutator steps {mutator.steps}, checkouts "
        f"{mutator.checkouts}; {seen}; {stale}; {pcts([c.wall for c in results])}; {load()}",
        flush=True,
    )


def idle(soak: Soak, repo: Path, minutes: float, rounds: int) -> None:
    idle_s = max(minutes * 60, MIN_IDLE_S)  # what the daemon waits
    print(
        f"\n3 idle: QMD_IDLE_MINUTES={minutes:g} ({idle_s:.1f} s), {rounds} calls timed around the exit",
        flush=True,
    )
    # a job keeps a daemon up (an embed pass takes minutes on 2 cores): none left, the exit is
    # the idle timer's alone
    soak.check("idle", soak.search(repo, "settle"), "settling search")
    if not soak.wait_idle(timeout=900, kinds=("refresh", "embed")):
        soak.report.fail("idle", "the daemon's jobs did not finish within 900 s")
    soak.stop_daemon()
    rng = random.Random(3)
    calls: list[Call] = []
    for i in range(rounds):
        call = soak.search(repo, QUERIES[i % len(QUERIES)], timeout=90, QMD_IDLE_MINUTES=f"{minutes:g}")
        calls.append(call)
        soak.check("idle", call, f"call {i} (idle {minutes:g})")
        if call.wall > 15:
            soak.report.fail("idle", f"call {i} took {call.wall:.1f} s (a hang on the exit?)")
        # the daemon counts from the end of its last answer; a call reaches it ~0.1 s after it starts
        time.sleep(max(0.0, idle_s + rng.uniform(-0.4, 0.2)))
    print(
        f"  calls {len(calls)} ({fallbacks(calls)}), daemons started so far {len(soak.daemon_pids())}; "
        f"{pcts([c.wall for c in calls])}; {load()}",
        flush=True,
    )
    soak.stop_daemon()


def kill(soak: Soak, repo: Path, rounds: int) -> None:
    print("\n4 kill: daemon killed -9 mid-refresh and mid-embed while searches run", flush=True)
    soak.check("kill", soak.search(repo, "soak_marker_ident"), "first search")
    soak.wait_idle()
    for what in ("refresh", "embed") * rounds:
        state = soak.state()
        if state is None:
            soak.report.fail("kill", "no daemon before the kill")
            return
        pid = int(state["pid"])
        git(repo, "checkout", "-q", "-f", "soak-alt" if "alt" not in _branch(repo) else "main")  # 100 files
        stop = threading.Event()
        results: list[Call] = []

        def searcher(stop: threading.Event, results: list[Call]) -> None:
            while not stop.is_set():
                results.append(soak.search(repo, "main entry point"))

        threads = [threading.Thread(target=searcher, args=(stop, results)) for _ in range(2)]
        for t in threads:
            t.start()
        soak.http("POST", "/refresh", {"path": str(repo), "embed": True, "wait": 0}, timeout=60)
        running = soak.running(what)  # its embed job follows the refresh
        time.sleep(0.2 if what == "embed" else 0.0)  # a refresh of 100 files takes ~0.4 s
        os.kill(pid, signal.SIGKILL)
        time.sleep(2.0)
        stop.set()
        for t in threads:
            t.join(timeout=200)
        after = soak.search(repo, "soak_branch_line")
        soak.check("kill", after, f"first call after the kill mid-{what}")
        for i, call in enumerate(results):
            soak.check("kill", call, f"search #{i} around the kill mid-{what}")
        verdict = soak.integrity()
        if verdict != "ok":
            soak.report.fail("kill", f"integrity_check after the kill mid-{what}: {verdict}")
        known = soak.search(repo, "how are errors reported")
        if not known.hits or not all((repo / str(h["path"])).exists() for h in known.hits):
            soak.report.fail("kill", f"after the kill mid-{what}: hits {[h.get('path') for h in known.hits]}")
        new = soak.state()
        print(
            f"  mid-{what}: job running at the kill {running and running.get('kind')}; "
            f"searches {len(results)} ({fallbacks(results)}) {pcts([c.wall for c in results])}; "
            f"next call {after.wall * 1000:.0f} ms, "
            f"new daemon pid {new and new.get('pid')}; integrity {verdict}; {len(known.hits)} hits; {load()}",
            flush=True,
        )
        soak.wait_idle()


def _branch(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "branch", "--show-current"], capture_output=True, text=True
    ).stdout.strip()


def terminal(soak: Soak, repo: Path, removed: Path) -> None:
    print(
        "\n5 terminal: `qmd-daemon update` beside the daemon's refresh; `collection remove` mid-search",
        flush=True,
    )
    soak.check("terminal", soak.search(repo, "settle"), "first search")
    git(repo, "checkout", "-q", "-f", "soak-alt" if "alt" not in _branch(repo) else "main")
    with ThreadPoolExecutor(3) as pool:
        searched = pool.submit(soak.search, repo, "main entry point")
        updated = pool.submit(soak.cli, "update")
        refreshed = pool.submit(soak.http, "POST", "/refresh", {"path": str(repo), "wait": 120}, 180)
        search, update = searched.result(), updated.result()
        try:
            job = refreshed.result()["jobs"][0]
            job_said = f"{job['state']} {job.get('error') or ''}".strip()
        except Exception as exc:  # noqa: BLE001 - said in the report
            job_said = f"{type(exc).__name__}: {exc}"
            soak.report.fail("terminal", f"the daemon's refresh: {job_said}")
    soak.check("terminal", search, "search beside the update")
    said = update.stdout + update.stderr
    if update.returncode != 0 or any(w in said for w in BAD_WORDS):
        soak.report.fail("terminal", f"qmd-daemon update exit {update.returncode}: {said.strip()[-300:]}")
    if job_said.startswith("failed"):
        soak.report.fail("terminal", f"the daemon's refresh failed: {job_said}")
    print(
        f"  update exit {update.returncode} ({said.strip().splitlines()[-1:] or ['']}[0]); daemon refresh "
        f"{job_said}; search {search.wall * 1000:.0f} ms",
        flush=True,
    )
    soak.wait_idle()
    name = f"repo-{removed.name}"
    soak.check("terminal", soak.search(removed, "how are errors reported"), f"search in {removed.name}")
    with ThreadPoolExecutor(4) as pool:
        searches = [pool.submit(soak.search, removed, q) for q in QUERIES[:3]]
        time.sleep(0.1)
        gone = soak.cli("collection", "remove", name)
        results = [f.result() for f in searches]
    said = gone.stdout + gone.stderr
    if gone.returncode != 0 or "Traceback" in said:
        soak.report.fail("terminal", f"collection remove exit {gone.returncode}: {said.strip()[-300:]}")
    for i, call in enumerate(results):
        soak.check("terminal", call, f"search #{i} during the remove")
    after = soak.search(removed, "how are errors reported")
    soak.check("terminal", after, "search after the remove (registers it again)")
    print(
        f"  remove exit {gone.returncode}; searches during it: exits {[c.rc for c in results]}, hits "
        f"{[len(c.hits) for c in results]}; after: {len(after.hits)} hits, {after.wall * 1000:.0f} ms; "
        f"integrity {soak.integrity()}; {load()}",
        flush=True,
    )
    for call in results:
        if not call.hits:  # the search that met the removal: what it told the agent
            print(f"    empty answer; stderr: {call.stderr.strip()[-300:]!r}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", type=Path, default=ROOT / ".test-cache" / "models")
    ap.add_argument("--processes", type=int, default=5, help="scenario 1's processes (3-6)")
    ap.add_argument("--calls", type=int, default=200, help="scenario 2's ai-search calls")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--idle-rounds", type=int, default=12)
    ap.add_argument("--kill-rounds", type=int, default=2, help="scenario 4: kills mid-refresh and mid-embed")
    ap.add_argument("--only", default="12345", help="scenarios to run (digits)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary HOME")
    args = ap.parse_args()
    if not args.models_dir.is_dir():
        print(
            f"soak: error: no models in {args.models_dir} (run the tests once to build them)", file=sys.stderr
        )
        return 2
    missing = [name for name in REPOS if not (CORPORA / name).is_dir()]
    if missing:
        print(f"soak: error: no {', '.join(missing)} in {CORPORA} (get them with "
              "../shared/eval/get-dev-git-corpora.py, as ../shared/eval/README.md says)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop the daemon it started
    base = Path(tempfile.mkdtemp(prefix="qmd-soak-"))
    report = Report()
    soak = Soak(base, args.models_dir.resolve(), report)
    print(f"soak: HOME {base}, {load()}", flush=True)
    started = time.monotonic()
    try:
        a, b, c = (make_repo(base, name) for name in REPOS)
        make_branch(a)
        if "1" in args.only:
            cold(soak, [a, b, c], args.processes)
        if "2" in args.only:
            churn(soak, a, args.calls, args.workers)
        if "3" in args.only:
            for minutes in (0.0, 0.04):
                idle(soak, a, minutes, args.idle_rounds)
        if "4" in args.only:
            kill(soak, a, args.kill_rounds)
        if "5" in args.only:
            terminal(soak, a, b)
    finally:
        soak.stop_daemon()
        said = "".join(p.read_text(errors="replace") for p in soak.log_dir.glob("*.log"))
        for word in (*BAD_WORDS, " ERROR "):
            if word in said:
                report.fail("logs", f"'{word}' in {soak.log_dir}")
        # a warm following its jobs when the daemon is killed or stopped says so and exits 0
        for line in re.findall(r".*qmd-warm failed.*", said):
            print(f"  warm.log: {line}")
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\nsoak: {len(report.failures)} failures in {time.monotonic() - started:.0f} s; {load()}")
    for line in report.failures:
        print(f"  {line}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
