"""The daemon's background embedding beside the user's own work, at each priority level, in one run.

    python bench/embed_nice.py [--corpus ~/.cache/qmd-eval/corpora/pydantic/pydantic]
        [--levels off,19,idle] [--work-seconds 12] [--searches 8] [--alone-seconds 15] [--edits 3]

0. Probe: which threads llama.cpp computes on. A decode on a thread niced to 10, then queries on
   this thread; each thread's nice value and CPU ticks read from /proc/self/task (libgomp keeps a
   worker pool per calling thread, made by it, so inheriting its nice value, and ended with it).
1. The competitor (a stand-in for a build: one pure-Python loop per core, fixed work sized to
   --work-seconds) timed alone, at the start and at the end of the run (their mean: the baseline).
2. For each level: a real daemon (`python -m qmd_daemon.daemon serve`, small profile,
   QMD_EMBED_PRIORITY=level) on a copy of one indexed home with nothing embedded, so it embeds in
   the background from its start. Once its deep pass runs: --alone-seconds of embedding alone (its
   chunks/s, from /health's progress) with --searches POST /search calls timed; then the competitor
   beside it: its wall time, the embedding's chunks/s meanwhile, the same searches; then, beside a
   second run of it, --edits edits one after another, each a new file and a search that asks for
   it (refresh, 40 s wait): their seconds (edit to visible), and whether each new function was
   found; the embed batches stopped mid-decode for them (models/abort.py), from the job's result.
Ratios: the competitor's wall against its baseline; chunks/s and search p50 against `off`
(today's behaviour) in the same run. Load average before and after, and at each level's start.
A level asked twice (`--levels off,19,off,19`) runs anew, and a summary per level follows.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "clients"))

import _qmd_client as qc  # noqa: E402

CORPORA = Path.home() / ".cache" / "qmd-eval" / "corpora"
MODELS = ROOT / ".test-cache" / "models"
QUERIES = ["how are validators run on a field", "where is the json schema generated",
           "parse a datetime string", "model config extra fields forbidden",
           "serialize a model to dict", "custom type with core schema"]
LOOP = "import sys\nx = 0\nfor i in range(int(sys.argv[1])):\n    x += i\n"


def tasks() -> dict[int, tuple[int, int]]:
    """This process's threads: tid -> (nice, CPU ticks)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[16]), int(fields[11]) + int(fields[12]))
    return out


def probe() -> None:
    """Part 0."""
    from qmd_daemon.models.embedder import Embedder
    from qmd_daemon.models.profiles import build_small_embed

    embedder = Embedder(build_small_embed(MODELS), threads=2)
    embedder.embed_query("load")
    seen: dict[str, Any] = {}

    def niced() -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        before = tasks()
        for i in range(10):
            embedder.embed_documents([f"def probe_{i}(): return {i}\n" * 20])
        after = tasks()
        seen["bg"] = {t: (n, c - before.get(t, (0, 0))[1]) for t, (n, c) in after.items()}

    thread = threading.Thread(target=niced)
    thread.start()
    thread.join()
    before = tasks()
    for i in range(10):
        embedder.embed_query(f"query {i} about parsing " * 10)
    after = tasks()
    fg = {t: (n, c - before.get(t, (0, 0))[1]) for t, (n, c) in after.items()}
    busy = lambda d: {t: v for t, v in d.items() if v[1] > 0}  # noqa: E731
    print("probe: threads computing a decode on a thread niced to 10, tid: (nice, ticks): "
          f"{busy(seen['bg'])}")
    print(f"       then queries on this thread (tid {threading.get_native_id()}): {busy(fg)}; "
          f"threads left: {sorted(after)}")
    embedder.unload()


def competitor(n: int, procs: int) -> float:
    """Wall seconds of `procs` loops of `n` additions run at once (the build stand-in)."""
    started = time.perf_counter()
    running = [subprocess.Popen([sys.executable, "-c", LOOP, str(n)]) for _ in range(procs)]
    for proc in running:
        proc.wait()
    return time.perf_counter() - started


def calibrate(seconds: float) -> int:
    n = 5_000_000
    took = competitor(n, 1)
    return int(n * seconds / took)


def template(corpus: Path, work: Path) -> tuple[Path, str]:
    """One home with the corpus indexed and nothing embedded; copied for each level."""
    home = work / "template"
    os.environ["QMD_DAEMON_HOME"] = str(home)
    os.environ["QMD_MODELS_DIR"] = str(MODELS)
    from qmd_daemon.config import IndexConfig
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    settings = Settings.from_env()
    settings.config_file.parent.mkdir(parents=True, exist_ok=True)
    config = IndexConfig.load(settings.config_file)
    config.set_models({"profile": "small"})
    config.save()
    repo = work / "repo"
    shutil.copytree(corpus, repo)
    engine = Engine(settings)
    try:
        name = engine.add_collection(repo, "bench-nice").name
        engine.update([name], progress=False)
        print(f"corpus {corpus}: {engine.pending_vectors(None)} chunks to embed")
    finally:
        engine.close()
    return home, name


@dataclass
class Run:
    level: str
    alone_rate: float = 0.0
    alone_searches: list[float] = field(default_factory=list)
    comp_wall: float = 0.0
    comp_rate: float = 0.0
    comp_searches: list[float] = field(default_factory=list)
    edit_waits: list[float] = field(default_factory=list)  # each edit, then a search asking for it
    edits_found: int = 0
    aborted: int = 0  # embed batches stopped mid-decode (the job's result, summed over its runs)
    load: float = 0.0  # the 1-minute load average as the level started
    applied: str = ""


class Daemon:
    def __init__(self, home: Path, level: str):
        self.home = home
        env = dict(os.environ, QMD_DAEMON_HOME=str(home), QMD_EMBED_PRIORITY=level, QMD_IDLE_MINUTES="30",
                   PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "qmd_daemon.daemon", "serve"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def http(self, method: str, path: str, body: Any = None) -> Any:
        os.environ["QMD_DAEMON_HOME"] = str(self.home)
        state = qc.read_state()
        if state is None:
            raise RuntimeError("no state file yet")
        return qc.http(state, method, path, body, 60)

    def done(self) -> int | None:
        """Chunks the deep pass has embedded so far; None before it runs."""
        try:
            running = self.http("GET", "/health")["jobs"]["running"]
        except Exception:  # noqa: BLE001 - not up yet
            return None
        step = (running or {}).get("progress") or {}
        return int(step["done"]) if step.get("step") == "embedding" else None

    def wait_embedding(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (done := self.done()) is not None and done > 0:
                return
            time.sleep(0.5)
        raise RuntimeError("the daemon's deep pass did not start")

    def search(self, name: str, query: str) -> float:
        started = time.perf_counter()
        self.http("POST", "/search", {"query": query, "collections": [name], "limit": 5})
        return time.perf_counter() - started

    def aborted(self) -> int:
        """Batches the embed jobs stopped mid-decode so far (their results; the running one's
        runs before its last yield)."""
        jobs = self.http("GET", "/status")["jobs"]
        every = [*jobs["recent"], *jobs["queued"], *([jobs["running"]] if jobs["running"] else [])]
        return sum(int((j["result"] or {}).get("aborted") or 0) for j in every if j["kind"] == "embed")

    def stop(self) -> tuple[str, int]:
        applied, aborted = "", 0
        try:
            applied = str(self.http("GET", "/health")["jobs"]["embed_priority"])
            aborted = self.aborted()
            self.http("POST", "/shutdown")
        except Exception:  # noqa: BLE001
            pass
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        return applied, aborted


def searches(daemon: Daemon, name: str, n: int, until: threading.Event | None = None) -> list[float]:
    out = []
    for i in range(n):
        if until is not None and until.is_set():
            break
        out.append(daemon.search(name, QUERIES[i % len(QUERIES)]))
        time.sleep(0.3)
    return out


def measure(level: str, template_home: Path, name: str, work: Path, n: int, args: argparse.Namespace) -> Run:
    home = work / f"home-{level}"
    shutil.rmtree(home, ignore_errors=True)  # a level asked twice (`--levels off,19,off,19`) runs anew
    shutil.copytree(template_home, home)
    run = Run(level, load=os.getloadavg()[0])
    daemon = Daemon(home, level)
    try:
        daemon.wait_embedding()
        daemon.search(name, "warm up")
        t0, d0 = time.perf_counter(), daemon.done() or 0
        run.alone_searches = searches(daemon, name, args.searches)
        time.sleep(max(0.0, args.alone_seconds - (time.perf_counter() - t0)))
        t1, d1 = time.perf_counter(), daemon.done() or 0
        run.alone_rate = (d1 - d0) / (t1 - t0)
        result: dict[str, float] = {}
        over = threading.Event()

        def build() -> None:
            result["wall"] = competitor(n, args.procs)
            over.set()

        thread = threading.Thread(target=build)
        thread.start()
        time.sleep(0.5)
        run.comp_searches = searches(daemon, name, args.searches, over)
        thread.join()
        t2, d2 = time.perf_counter(), daemon.done() or 0
        run.comp_wall = result["wall"]
        run.comp_rate = (d2 - d1) / (t2 - t1)
        # then edits, each with a search that asks for it, while a second build runs
        thread = threading.Thread(target=competitor, args=(n, args.procs))
        thread.start()
        for _ in range(args.edits):
            time.sleep(0.5)
            waited, found = edit_search(daemon, name, work / "repo", level)
            run.edit_waits.append(waited)
            run.edits_found += found
        thread.join()
    finally:
        run.applied, run.aborted = daemon.stop()
    return run


def edit_search(daemon: Daemon, name: str, repo: Path, level: str) -> tuple[float, bool]:
    """A new function written, then a search that asks the daemon to take it in (refresh, waiting
    up to 40 s as ai-search's would): seconds, and whether the new function is the first hit. The
    refresh used to run after the embed job's current batch (a niced batch on a busy machine held
    it for seconds); now a niced batch stops mid-decode for it (models/abort.py)."""
    added = repo / f"edited_{level}_{time.monotonic_ns()}.py"
    function = f"freshly_added_{added.stem}"
    added.write_text(f"def {function}():\n    return 1\n", encoding="utf-8")
    started = time.perf_counter()
    answer = daemon.http("POST", "/search", {"query": function, "collections": [name], "refresh": True,
                                             "wait": 40, "limit": 3})
    hits = answer.get("hits") or []
    return time.perf_counter() - started, bool(hits) and hits[0]["path"].endswith(added.name)


def p50(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPORA / "pydantic" / "pydantic")
    ap.add_argument("--levels", default="off,19,idle")
    ap.add_argument("--work-seconds", type=float, default=12.0, help="one competitor loop alone")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 2, help="competitor loops (one a core)")
    ap.add_argument("--searches", type=int, default=8)
    ap.add_argument("--alone-seconds", type=float, default=15.0)
    ap.add_argument("--edits", type=int, default=3, help="edits beside the second build, one after another")
    ap.add_argument("--no-probe", action="store_true")
    args = ap.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    if not args.no_probe:
        probe()
    n = calibrate(args.work_seconds)
    alone = [competitor(n, args.procs)]
    runs = []
    with tempfile.TemporaryDirectory(prefix="qmd-embed-nice-") as tmp:
        work = Path(tmp)
        home, name = template(args.corpus.expanduser().resolve(), work)
        for level in args.levels.split(","):
            runs.append(measure(level, home, name, work, n, args))
    alone.append(competitor(n, args.procs))
    base = statistics.mean(alone)
    print(f"competitor alone ({args.procs} loops): {alone[0]:.1f} s, {alone[1]:.1f} s (end); "
          f"baseline {base:.1f} s")
    ref = runs[0]
    print(f"{'level':<6} {'applied':<8} {'load':>5} | {'embed alone':>12} {'search p50/max':>16} | "
          f"{'competitor':>16} {'embed beside':>14} {'search p50/max':>16} | {'edit to visible p50/max':>24} "
          f"{'found':>5} {'aborted':>7}")
    for r in runs:
        print(f"{r.level:<6} {r.applied:<8} {r.load:5.2f} | {r.alone_rate:6.1f} ch/s  "
              f"{p50(r.alone_searches):6.0f}/{max(r.alone_searches) * 1000:6.0f} ms | "
              f"{r.comp_wall:5.1f} s x{r.comp_wall / base:4.2f}  {r.comp_rate:6.1f} ch/s  "
              f"{p50(r.comp_searches):6.0f}/{max(r.comp_searches, default=0) * 1000:6.0f} ms | "
              f"{p50(r.edit_waits) / 1000:10.2f} /{max(r.edit_waits, default=0):6.2f} s      "
              f"{r.edits_found}/{len(r.edit_waits)} {r.aborted:7d}")
    for r in runs[1:]:
        print(f"{r.level} / {ref.level}: embed alone x{r.alone_rate / ref.alone_rate:.2f}, search alone p50 "
              f"x{p50(r.alone_searches) / p50(ref.alone_searches):.2f}; competitor wall "
              f"x{r.comp_wall / ref.comp_wall:.2f}, "
              f"embed beside x{r.comp_rate / max(ref.comp_rate, 1e-9):.2f}, "
              f"search beside p50 x{p50(r.comp_searches) / p50(ref.comp_searches):.2f}")
    print("per level (every run of it pooled): edit to visible p50 / max, competitor x baseline, embed alone")
    for level in dict.fromkeys(r.level for r in runs):
        mine = [r for r in runs if r.level == level]
        waits = [w for r in mine for w in r.edit_waits]
        print(f"{level:<6} {p50(waits) / 1000:5.2f} / {max(waits, default=0):5.2f} s "
              f"({sum(r.edits_found for r in mine)}/{len(waits)} found); competitor "
              f"{' '.join(f'x{r.comp_wall / base:.2f}' for r in mine)}; embed alone "
              f"{' '.join(f'{r.alone_rate:.1f}' for r in mine)} ch/s; aborted {sum(r.aborted for r in mine)}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
