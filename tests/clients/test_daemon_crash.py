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

import pytest

from clients import _qmd_client as qc
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
    log = daemon_home / "state" / "logs" / "daemon.log"  # where a daemon a client starts writes
    log.parent.mkdir(parents=True, mode=0o700)
    with log.open("ab") as stderr, daemon_running(daemon_home, _CRASHING_DAEMON, stderr=stderr) as crashing:
        proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
        assert crashing.wait(timeout=30) == -signal.SIGSEGV
    assert proc.returncode == 0, proc.stderr
    assert (f"the daemon (pid {crashing.pid}) died while answering (Fatal Python error: Segmentation "
            f"fault): {log} ends with what it said last; starting another") in proc.stderr, proc.stderr
    hits = json.loads(proc.stdout)
    assert hits and hits[0]["path"] == "src/client.py"  # the daemon started in its place answered
    state = state_of(daemon_home)
    assert state["pid"] != crashing.pid and pid_running(state["pid"])
    crash_log = log.read_text(errors="replace")
    assert "Fatal Python error: Segmentation fault" in crash_log and "in crash" in crash_log


def test_the_reason_of_a_crash_dump_is_its_fatal_error_line(
    daemon_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dump ends with its list of extension modules, no reason: "the daemon exited at start:
    Extension modules: yaml._yaml, ..." said nothing; a log that ends otherwise keeps its last line."""
    monkeypatch.setenv("QMD_DAEMON_HOME", str(daemon_home))
    log = daemon_home / "state" / "logs" / "daemon.log"
    log.parent.mkdir(parents=True, mode=0o700)
    dump = ["2026-12-04 18:16:45,266 INFO qmd_daemon.server: listening on 127.0.0.1:44109 (pid 14489)",
            "Fatal Python error: Segmentation fault", "",
            "Current thread 0x00007f163704ab80 (most recent call first):",
            '  File "/x/qmd_daemon/models/embedder.py", line 90 in load', "",
            "Extension modules: yaml._yaml, pysqlite3._sqlite3 (total: 2)"]
    log.write_text("\n".join(dump) + "\n")
    assert qc.last_log_line("daemon.log") == "Fatal Python error: Segmentation fault"
    log.write_text("index.yml: models.profile: 'tiny' is not a profile\n")
    assert qc.last_log_line("daemon.log") == "index.yml: models.profile: 'tiny' is not a profile"
