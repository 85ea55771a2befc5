"""A daemon that dies while answering (on an H200, a CUDA build of llama.cpp crashed every daemon
with SIGSEGV at its first model load): the client says so, names the log, and still answers; the
daemon's log holds the crash's Python stack.

The llama.cpp build here does not crash, so the daemon is this code with its search replaced by a
SIGSEGV of its own thread before it starts: the real daemon, client and signal, the crash moved
to where the H200's happened (inside /search)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.daemon.support import daemon_running, make_repo, pid_running, run_client, state_of

_CRASHING_DAEMON = """
import runpy, signal, sys, threading
from qmd_daemon.engine import Engine

def crash(*args, **kwargs):  # to this thread, as a bad memory access is (os.kill may reach another)
    signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)

Engine.search = crash
sys.argv = ["qmd_daemon.daemon", "serve"]
runpy.run_module("qmd_daemon.daemon", run_name="__main__")
"""


def test_a_daemon_that_dies_while_answering_is_named_and_replaced(daemon_home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    log = tmp_path / "crashing-daemon.log"
    with log.open("wb") as stderr, daemon_running(daemon_home, _CRASHING_DAEMON, stderr=stderr) as crashing:
        proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
        assert crashing.wait(timeout=30) == -signal.SIGSEGV
    assert proc.returncode == 0, proc.stderr
    assert f"the daemon (pid {crashing.pid}) died while answering" in proc.stderr, proc.stderr
    assert "daemon.log ends with what it said last; starting another" in proc.stderr
    hits = json.loads(proc.stdout)
    assert hits and hits[0]["path"] == "src/client.py"  # the daemon started in its place answered
    state = state_of(daemon_home)
    assert state["pid"] != crashing.pid and pid_running(state["pid"])
    crash_log = log.read_text(errors="replace")
    assert "Fatal Python error: Segmentation fault" in crash_log and "in crash" in crash_log
