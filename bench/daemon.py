"""The daemon's costs, as an agent sees them. One run, in a fresh QMD_DAEMON_HOME:

  cold start     first `ai-search` with no daemon: spawn, index the repository, answer
  overhead       `ai-search` end to end (a real subprocess, as an agent runs it) against the daemon's
                 own compute for the same call (`search_ms`: the engine's search; `took_ms`: the
                 whole handler); target: p50 of (end to end - search_ms) <= 60 ms. Four ways:
                 a venv with the clients installed as the installer installs them (the first row,
                 the target's: what users run); this dev venv's python, whose editable-install
                 finder imports pathlib, urllib and more on every start; the same with the client's
                 own `git ls-files` + stat check (what runs where the daemon cannot vouch for a root: macOS,
                 Windows, network filesystems); python -S
  full pipeline  warm POST /search with vectors + rerank (+ expansion with --expand) on the
                 `small` model profile, after one warm-up pass
  memory         daemon RSS (and peak) with the models loaded
  idle CPU       CPU seconds the daemon uses over --idle-seconds without a request (target ~0)

    python bench/daemon.py [--repo DIR] [--rounds 3] [--idle-seconds 60] [--profile small|none]
                           [--rerank-candidates N] [--expand] [--json OUT]

--repo defaults to this repository. The small profile's models are taken from --models-dir
(default .test-cache/models, built there when missing).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "clients"))

import _qmd_client as qc  # noqa: E402

# what the `ai-search` console script pip writes does (it imports re), with clients/ on the path
LAUNCHER = (
    f"import re, sys; sys.path.insert(0, {str(ROOT / 'clients')!r}); "
    "from ai_search import run; sys.argv[0] = 'ai-search'; sys.exit(run())"
)

QUERIES = [
    "where is the daemon token compared",
    "parse_search",
    "how are collections resolved from a path",
    "IndexStore fts_search",
    "watch files and refresh the index",
    "embedding pending chunks",
    "idle timeout exit",
    "chunk markdown by heading",
    "reciprocal rank fusion weights",
    "git ls-files scan",
]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# the console script an installed venv's pip (23.x, as bundled with Python 3.11) writes
INSTALLED_LAUNCHER = (
    "import re, sys; from clients.ai_search import run; "
    "sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0]); sys.exit(run())"
)


def installed_python(home: Path) -> str:
    """A venv holding the clients the way the installer's venv does (a plain, not editable,
    install) plus what setuptools puts in every 3.11 venv; the daemon keeps this checkout's."""
    venv = home / "client-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    shutil.copytree(ROOT / "clients", site / "clients", ignore=shutil.ignore_patterns("__pycache__"))
    here = Path(sysconfig.get_paths()["purelib"])
    for name in ("distutils-precedence.pth", "_distutils_hack"):
        if (here / name).is_dir():
            shutil.copytree(here / name, site / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif (here / name).exists():
            shutil.copy2(here / name, site / name)
    return str(python)


def run_client(
    query: str,
    repo: Path,
    env: dict[str, str],
    flags: tuple[str, ...] = (),
    python: str = sys.executable,
    launcher: str = LAUNCHER,
) -> tuple[float, dict[str, Any], int]:
    started = time.perf_counter()
    proc = subprocess.run(
        [python, *flags, "-c", launcher, query, "--json"],
        cwd=repo,
        env={**env, "QMD_TIMING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    wall_ms = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"ai-search failed: {proc.stderr.strip()}")
    timing: dict[str, Any] = {}
    for line in proc.stderr.splitlines():
        if line.startswith('{"qmd_timing"'):
            timing = json.loads(line)["qmd_timing"]
    return wall_ms, timing, len(json.loads(proc.stdout))


def proc_stat(pid: int) -> tuple[float, int, int]:
    """(CPU seconds, RSS kB, peak RSS kB) from /proc (Linux)."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    rss = hwm = 0
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
    return cpu, rss, hwm


def interpreter_floor(
    env: dict[str, str], flags: tuple[str, ...] = (), n: int = 5, python: str = sys.executable
) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        subprocess.run([python, *flags, "-c", "pass"], env=env, check=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=ROOT)
    ap.add_argument("--rounds", type=int, default=3, help="passes over the queries for the overhead")
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--profile", choices=["small", "none"], default="small")
    ap.add_argument("--models-dir", type=Path, default=ROOT / ".test-cache" / "models")
    ap.add_argument("--rerank-candidates", type=int, default=None, help="default: the engine's")
    ap.add_argument("--expand", action="store_true", help="add query expansion to the full pipeline")
    ap.add_argument("--full-queries", type=int, default=len(QUERIES))
    ap.add_argument("--json", type=Path, help="write the numbers here too")
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still shut the daemon down
    home = Path(tempfile.mkdtemp(prefix="qmd-bench-daemon-"))
    env = dict(os.environ, QMD_DAEMON_HOME=str(home), QMD_IDLE_MINUTES="60", QMD_DAEMON_PYTHON=sys.executable)
    # an installed client runs from bytecode compiled at install time; this checkout may not write
    # any (PYTHONDONTWRITEBYTECODE), so the warm-up calls compile into a private prefix
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
    if args.profile == "small":
        from qmd_daemon.models.profiles import build_small_profile

        build_small_profile(args.models_dir)
        env["QMD_MODELS_DIR"] = str(args.models_dir)
        (home / "config").mkdir(parents=True)
        (home / "config" / "index.yml").write_text("models:\n  profile: small\n")
    os.environ.update(env)  # for the qc helpers (state file location)
    repo = args.repo.resolve()
    results: dict[str, Any] = {"repo": str(repo), "profile": args.profile}
    try:
        started = time.perf_counter()
        run_client("daemon", repo, env)
        results["cold_start_ms"] = round((time.perf_counter() - started) * 1000, 1)
        state = qc.read_state()
        assert state is not None, "no daemon state after the first call"
        pid = int(state["pid"])
        print(f"cold start (spawn + index + answer): {results['cold_start_ms']:.0f} ms  (pid {pid})")

        if args.profile == "small":
            t0 = time.perf_counter()
            reply = qc.http(state, "POST", "/embed", {"path": str(repo), "wait": 3600}, timeout=3700)
            job = reply["jobs"][0]
            results["embed_s"] = round(time.perf_counter() - t0, 2)
            print(f"embed: {job['state']} {job.get('result') or job.get('error')} in {results['embed_s']} s")

        for query in QUERIES:  # warm-up: query embeddings, caches
            run_client(query, repo, env)
        installed = installed_python(home)
        here = sys.executable
        variants = [  # suffix, label, flags, python, launcher, the client checks with git itself
            ("_installed", "installed layout (the target's)", (), installed, INSTALLED_LAUNCHER, False),
            ("", "dev venv python (editable finder)", (), here, LAUNCHER, False),
            ("_git", "dev venv, the client's own git status check", (), here, LAUNCHER, True),
            ("_nosite", "python -S (no site: no .pth, no editable finder)", ("-S",), here, LAUNCHER, False),
        ]
        for suffix, label, flags, python, launcher, git_check in variants:
            floor = interpreter_floor(env, flags, python=python)
            walls, search_ms, took_ms, overhead, overhead_handler = [], [], [], [], []
            modes: dict[str, int] = {}
            for _ in range(args.rounds):
                for query in QUERIES:
                    if git_check:  # what the client last saw: this signature, and no word from the daemon
                        top = qc.repo_root(str(repo))[0]
                        qc.write_stamp(top, qc.repo_signature(top))
                    wall, timing, _n = run_client(query, repo, env, flags, python, launcher)
                    vouched = timing.get("sent_refresh") == "auto"
                    mode = "no git (daemon vouched)" if vouched else "git ls-files + stat"
                    modes[mode] = modes.get(mode, 0) + 1
                    walls.append(wall)
                    search_ms.append(float(timing.get("search_ms") or 0))
                    took_ms.append(float(timing.get("took_ms") or 0))
                    overhead.append(wall - search_ms[-1])
                    overhead_handler.append(wall - took_ms[-1])
            row = {
                "interpreter_floor_ms": round(floor, 1),
                "e2e_p50_ms": round(pct(walls, 0.5), 1),
                "e2e_p90_ms": round(pct(walls, 0.9), 1),
                "search_p50_ms": round(pct(search_ms, 0.5), 1),
                "handler_p50_ms": round(pct(took_ms, 0.5), 1),
                "overhead_p50_ms": round(pct(overhead, 0.5), 1),
                "overhead_vs_handler_p50_ms": round(pct(overhead_handler, 0.5), 1),
                "freshness_check": modes,
            }
            results.update({k + suffix: v for k, v in row.items()})
            verdict = "OK" if row["overhead_p50_ms"] <= 60 else "OVER"
            print(f"[{label}]")
            print(
                f"  ai-search end to end: p50 {row['e2e_p50_ms']:.1f} ms, p90 {row['e2e_p90_ms']:.1f} ms "
                f"({len(walls)} calls; bare interpreter start {floor:.1f} ms; "
                f"{', '.join(f'{n} {m}' for m, n in modes.items())})"
            )
            print(
                f"  daemon compute: search p50 {row['search_p50_ms']:.1f} ms, "
                f"handler p50 {row['handler_p50_ms']:.1f} ms"
            )
            print(
                f"  overhead p50 (end to end - search): {row['overhead_p50_ms']:.1f} ms "
                f"[target <= 60: {verdict}]; vs handler {row['overhead_vs_handler_p50_ms']:.1f} ms; "
                f"above the bare interpreter {row['overhead_p50_ms'] - floor:.1f} ms"
            )
        results["overhead_target_ms"] = 60

        if args.profile == "small":
            body: dict[str, Any] = {"path": str(repo), "rerank": True, "expand": args.expand, "limit": 10}
            if args.rerank_candidates is not None:
                body["rerank_candidates"] = args.rerank_candidates
            full = []
            queries = QUERIES[: args.full_queries]
            # warm-up on a query not measured: loads the reranker (and expander) without filling
            # the rerank cache for the measured queries
            qc.http(state, "POST", "/search", {**body, "query": "warm up the models"}, timeout=600)
            for query in queries:
                reply = qc.http(state, "POST", "/search", {**body, "query": query}, timeout=600)
                full.append(float(reply["search_ms"]))
            results["full_pipeline_p50_ms"] = round(pct(full, 0.5), 1)
            results["full_pipeline_p90_ms"] = round(pct(full, 0.9), 1)
            what = "vectors + rerank" + (" + expansion" if args.expand else "")
            print(
                f"full pipeline ({what}, small profile): p50 {results['full_pipeline_p50_ms']:.0f} ms, "
                f"p90 {results['full_pipeline_p90_ms']:.0f} ms over {len(full)} queries"
            )
            status = qc.http(state, "GET", "/status")
            roles = status["models"]["roles"]
            results["models"] = {r: v.get("state") for r, v in roles.items()}
            results["device"] = status["models"]["device"]
            print(f"models: {results['models']} on {results['device']}")

        _, rss, hwm = proc_stat(pid)
        results["rss_mb"] = round(rss / 1024, 1)
        results["rss_peak_mb"] = round(hwm / 1024, 1)
        print(f"daemon RSS: {results['rss_mb']:.0f} MB (peak {results['rss_peak_mb']:.0f} MB)")

        time.sleep(2.0)  # let the last request's threads settle
        cpu0, _, _ = proc_stat(pid)
        time.sleep(args.idle_seconds)
        cpu1, _, _ = proc_stat(pid)
        results["idle_seconds"] = args.idle_seconds
        results["idle_cpu_s"] = round(cpu1 - cpu0, 3)
        print(f"idle CPU: {results['idle_cpu_s']:.3f} s over {args.idle_seconds:g} s")
    finally:
        state = qc.read_state()
        if state is not None:
            with contextlib.suppress(qc.DaemonUnavailable, qc.DaemonError):
                qc.http(state, "POST", "/shutdown", timeout=10)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
