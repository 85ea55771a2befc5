"""`ai-search` calls in a row while every daemon crashes at its first search, timed: what the
clients' crash back-off (clients/_qmd_client.py backing_off) saves. On a CUDA build of llama.cpp
every daemon once died with SIGSEGV at its first model load, and each search started another.

The crash is the tests' (tests/clients/test_daemon_crash.py): the checkout's daemon with
`Engine.search` replaced by a SIGSEGV of its own thread, started by the client through
QMD_DAEMON_PYTHON. For each checkout, on a fresh QMD_DAEMON_HOME (small profile, a copy of
qmd_daemon/daemon/ as a git repository, indexed first), one such daemon is running at the start
(as the SessionStart hook's qmd-warm leaves one), then `--calls` ai-search calls run one after
another with that checkout's client and Python:

    nice -n 10 python bench/crash_backoff.py [--before /work/main] [--calls 3] [--json]

`before`: another checkout (its .venv's Python and clients/ai_search.py); `after`: this one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# this code's daemon, its search replaced by a crash before it starts
CRASHING_DAEMON = """
import runpy, signal, sys, threading
from qmd_daemon.engine import Engine

def crash(*args, **kwargs):  # to this thread, as a bad memory access is (os.kill may reach another)
    signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)

Engine.search = crash
sys.argv = ["qmd_daemon.daemon", "serve"]
runpy.run_module("qmd_daemon.daemon", run_name="__main__")
"""


def crashing_python(folder: Path, python: str = sys.executable) -> Path:
    """A QMD_DAEMON_PYTHON whose `serve` is CRASHING_DAEMON (every daemon a client starts dies at
    its first search) and whose in-process search is `python`'s."""
    script = folder / "crashing_daemon.py"
    script.write_text(CRASHING_DAEMON)
    wrapper = folder / "crashing-python"
    wrapper.write_text(f'#!/bin/sh\nif [ "$3" = serve ]; then exec {python} {script}; fi\n'
                       f'exec {python} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def daemons_started(log: Path) -> list[int]:
    """The pid of every daemon that started listening, in order (a client's says it on stdout and
    in its log record, both in daemon.log)."""
    said = re.findall(r"listening on 127\.0\.0\.1:\d+ \(pid (\d+)\)", log.read_text(errors="replace"))
    return [int(pid) for pid in dict.fromkeys(said)]


def _run(checkout: Path, calls: int, models_dir: str) -> dict[str, Any]:
    python = str(checkout / ".venv" / "bin" / "python")
    with tempfile.TemporaryDirectory(prefix="qmd-crash-bench-") as tmp:
        home, repo = Path(tmp) / "home", Path(tmp) / "proj"
        shutil.copytree(REPO / "qmd_daemon" / "daemon", repo / "daemon")
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        (home / "config").mkdir(parents=True)
        (home / "config" / "index.yml").write_text("models: {profile: small}\n")
        wrapper = crashing_python(Path(tmp), python)
        env = dict(os.environ, QMD_DAEMON_HOME=str(home), QMD_MODELS_DIR=models_dir, HF_HUB_OFFLINE="1",
                   QMD_DAEMON_PYTHON=str(wrapper))
        qmd = [python, "-c", "from qmd_daemon.cli import main; main()"]
        subprocess.run([*qmd, "collection", "add", str(repo)], env=env, check=True, capture_output=True)
        log = home / "state" / "logs" / "daemon.log"
        log.parent.mkdir(parents=True, mode=0o700)
        with log.open("ab") as out:
            running = subprocess.Popen([str(wrapper), "-m", "qmd_daemon.daemon", "serve"], env=env,
                                       stdout=out, stderr=out, start_new_session=True)
        state = home / "state" / "daemon.json"
        deadline = time.monotonic() + 60
        while not (state.exists() and json.loads(state.read_text() or "{}").get("pid") == running.pid):
            if time.monotonic() > deadline or running.poll() is not None:
                raise SystemExit("the crashing daemon did not start")
            time.sleep(0.05)
        took = []
        search = [python, str(checkout / "clients" / "ai_search.py"), "how are jobs queued", "--json"]
        try:
            for _ in range(calls):
                started = time.perf_counter()
                proc = subprocess.run(search, cwd=repo, env=env, capture_output=True, text=True, check=False)
                took.append(time.perf_counter() - started)
                if proc.returncode != 0 or not json.loads(proc.stdout):
                    raise SystemExit(f"ai-search failed ({proc.returncode}): {proc.stderr}")
        finally:
            if running.poll() is None:  # it did not crash: the first search never reached it
                running.kill()
            running.wait()
            subprocess.run([*qmd, "stop"], env=env, capture_output=True, check=False)
        return {"calls_s": [round(t, 2) for t in took], "total_s": round(sum(took), 2),
                "daemons_started": len(daemons_started(log))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, default=Path("/work/main"), help="the checkout to compare")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--models-dir", default=str(REPO / ".test-cache" / "models"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = {name: _run(checkout.resolve(), args.calls, args.models_dir)
               for name, checkout in (("before", args.before), ("after", REPO))}
    figures["ratio"] = round(figures["before"]["total_s"] / figures["after"]["total_s"], 2)
    if args.json:
        print(json.dumps(figures))
    else:
        for name in ("before", "after"):
            run = figures[name]
            print(f"{name:>6}: {run['total_s']:6.2f} s  calls {run['calls_s']}  daemons started "
                  f"{run['daemons_started']}")
        print(f" ratio: {figures['ratio']}x (before / after)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
