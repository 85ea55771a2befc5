"""A daemon that dies while answering (on an H200, a CUDA build of llama.cpp crashed every daemon
with SIGSEGV at its first model load): the client says so, names the log, and still answers; the
daemon's log holds the crash's Python stack.

The llama.cpp build here does not crash, so the daemon is this code with its search replaced by a
SIGSEGV of its own thread before it starts: the real daemon, client and signal, the crash moved
to where the H200's happened (inside /search)."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest

from bench.crash_backoff import CRASHING_DAEMON, crashing_python, daemons_started
from clients import _qmd_client as qc
from tests.daemon.support import (
    daemon_running,
    make_repo,
    pid_running,
    run_client,
    start_serve,
    state_of,
    wait_for,
)


def test_a_daemon_that_dies_while_answering_is_named_and_replaced(daemon_home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    log = daemon_home / "state" / "logs" / "daemon.log"  # where a daemon a client starts writes
    log.parent.mkdir(parents=True, mode=0o700)
    with log.open("ab") as stderr, daemon_running(daemon_home, CRASHING_DAEMON, stderr=stderr) as crashing:
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


# -- crashes in a row: the back-off -------------------------------------------------------------


def _write_record(home: Path, record: object) -> Path:
    path = home / "state" / qc.CRASH_FILE
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(record if isinstance(record, str) else json.dumps(record))
    return path


def test_a_daemon_that_crashes_again_is_not_started_by_the_next_searches(
    daemon_home: Path, tmp_path: Path
) -> None:
    """The daemon dies, the one started in its place dies too: the client records it and answers
    in-process; the next searches within the window start no daemon and say why in one line."""
    repo = make_repo(tmp_path / "proj")
    log = daemon_home / "state" / "logs" / "daemon.log"
    log.parent.mkdir(parents=True, mode=0o700)
    dying = str(crashing_python(tmp_path))
    with log.open("ab") as stderr, daemon_running(daemon_home, CRASHING_DAEMON, stderr=stderr) as crashing:
        first = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo,
                           QMD_DAEMON_PYTHON=dying)
        assert crashing.wait(timeout=30) == -signal.SIGSEGV
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)[0]["path"] == "src/client.py"  # answered in-process
    started = daemons_started(log)
    assert len(started) == 2 and started[0] == crashing.pid, log.read_text()
    record_path = daemon_home / "state" / qc.CRASH_FILE
    record = json.loads(record_path.read_text())
    assert record["crashes"] == 2 and record["pid"] == started[1]
    assert record["reason"] == "Fatal Python error: Segmentation fault"
    assert record_path.stat().st_mode & 0o777 == 0o600
    at = time.strftime("%H:%M:%S", time.localtime(record["at"]))
    until = time.strftime("%H:%M:%S", time.localtime(record["at"] + qc.CRASH_BACKOFF_S))
    line = (f"ai-search: daemon unavailable (the daemon crashed twice in a row, last at {at} (Fatal Python "
            f"error: Segmentation fault): searches run in-process until {until} instead of starting one; "
            f"{log} ends with what it said last; `rm {record_path}` lets the next search start one); "
            "searching in-process")
    assert first.stderr.splitlines()[-1] == line, first.stderr  # after "...; starting another"
    for _ in range(2):
        again = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo,
                           QMD_DAEMON_PYTHON=dying)
        assert again.returncode == 0, again.stderr
        assert again.stderr.splitlines() == [line]
        assert again.stdout == first.stdout
    assert daemons_started(log) == started  # none started, none crashed
    assert json.loads(record_path.read_text()) == record


def test_daemons_killed_by_a_signal_as_they_start_are_crashes_in_a_row_too(
    daemon_home: Path, tmp_path: Path
) -> None:
    """With its models preloaded a daemon died at start (`the daemon exited at start: ...`), one
    per search: the second such death in a row holds the next starts back as well."""
    repo = make_repo(tmp_path / "proj")
    starts = tmp_path / "starts"
    python = tmp_path / "dying-python"
    python.write_text(f'#!/bin/sh\nif [ "$3" = serve ]; then echo serve >> {starts}; kill -SEGV $$; fi\n'
                      f'exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    said = []
    for _ in range(3):
        proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo,
                          QMD_DAEMON_PYTHON=str(python))
        assert proc.returncode == 0 and json.loads(proc.stdout)[0]["path"] == "src/client.py", proc.stderr
        said.append(proc.stderr)
    assert starts.read_text().split() == ["serve", "serve"]  # the third search started none
    assert said[0].startswith("ai-search: daemon unavailable (the daemon exited at start"), said[0]
    assert "(the daemon crashed twice in a row, last at " in said[1] and said[2] == said[1], said


@pytest.mark.parametrize("record", [
    {"at": "expired", "pid": 1, "reason": "Fatal Python error: Segmentation fault", "crashes": 2},
    '{"at": 1e999, "crashes": 2}',  # a window without end (json reads it as inf)
    '{"at": 17',  # cut off
    {"at": None, "crashes": True},
    [1, 2],
])  # fmt: skip
def test_an_expired_or_damaged_crash_record_starts_a_daemon_whose_answer_clears_it(
    daemon_home: Path, tmp_path: Path, record: object
) -> None:
    if isinstance(record, dict) and record["at"] == "expired":  # the window has passed: try one again
        record = dict(record, at=time.time() - qc.CRASH_BACKOFF_S - 1)
    path = _write_record(daemon_home, record)
    repo = make_repo(tmp_path / "proj")
    proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert json.loads(proc.stdout)[0]["path"] == "src/client.py"
    assert pid_running(state_of(daemon_home)["pid"])  # the daemon started and answered
    assert not path.exists()


def test_a_daemon_started_by_hand_during_the_back_off_answers_and_clears_it(
    daemon_home: Path, tmp_path: Path
) -> None:
    path = _write_record(daemon_home, {"at": time.time(), "pid": 1, "reason": "", "crashes": 3})
    repo = make_repo(tmp_path / "proj")
    serve = start_serve(daemon_home)
    wait_for(lambda: (state_of(daemon_home) or {}).get("pid") == serve.pid, timeout=60)
    proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo,
                      QMD_TIMING="1")
    assert proc.returncode == 0, proc.stderr
    assert '"in_process": null' in proc.stderr  # the daemon's answer, not a one-off process's
    assert json.loads(proc.stdout)[0]["path"] == "src/client.py"
    assert not path.exists()


def test_no_daemon_is_started_in_the_background_during_the_back_off(
    daemon_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ai-search outside git (a registered folder) starts one for the next call: not while backing off."""
    monkeypatch.setenv("QMD_DAEMON_HOME", str(daemon_home))
    _write_record(daemon_home, {"at": time.time(), "pid": 1, "reason": "", "crashes": 2})
    qc.start_in_background()
    assert not (daemon_home / "state" / "logs").exists()  # no daemon.log: nothing spawned
    assert not (daemon_home / "state" / qc.SPAWN_MARKER).exists()
