"""`qmd-daemon serve` as a real process: second start, stale state, SIGTERM, idle exit."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from qmd_daemon.daemon.state import DaemonState, probe_health, write_state
from tests.conftest import run_cli
from tests.daemon.support import env_for, pid_running, start_serve, state_of, stop_daemon, wait_for


@pytest.fixture
def serve_home(tmp_path: Path):
    home = tmp_path / "qmd-home"
    yield home
    stop_daemon(home)


def healthy_state(home: Path) -> DaemonState:
    def check() -> DaemonState | None:
        raw = state_of(home)
        if raw is None:
            return None
        state = DaemonState(**raw)
        return state if probe_health(state, timeout=1) else None

    return wait_for(check, timeout=30)


def test_second_serve_is_a_noop_and_sigterm_is_graceful(serve_home: Path) -> None:
    first = start_serve(serve_home)
    state = healthy_state(serve_home)
    assert state.pid == first.pid
    assert stat.S_IMODE((serve_home / "state" / "daemon.json").stat().st_mode) == 0o600
    second = run_cli("serve", env_home=serve_home, timeout=30)
    assert second.returncode == 0, second.stderr
    assert f"already running on 127.0.0.1:{state.port}" in second.stdout
    assert state_of(serve_home)["token"] == state.token and first.poll() is None
    first.send_signal(signal.SIGTERM)
    out, err = first.communicate(timeout=20)
    assert first.returncode == 0, err
    assert "stopped (signal SIGTERM)" in out
    assert not (serve_home / "state" / "daemon.json").exists()


def test_stale_state_is_replaced(serve_home: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    write_state(
        serve_home / "state", DaemonState(port=1, token="old", pid=dead.pid, version="0", started_at=0)
    )
    proc = start_serve(serve_home)
    state = healthy_state(serve_home)
    assert state.pid == proc.pid and state.token != "old"
    stop_daemon(serve_home)
    # a live pid whose port rejects the token is stale too
    write_state(
        serve_home / "state",
        DaemonState(port=state.port, token="x", pid=os.getpid(), version="0", started_at=0),
    )
    proc = start_serve(serve_home)
    state = healthy_state(serve_home)
    assert state.pid == proc.pid and state.token != "x"


def test_idle_exit_removes_the_state_file(serve_home: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "qmd_daemon.daemon", "serve"],
        env=env_for(serve_home, QMD_IDLE_MINUTES="0.02"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    healthy_state(serve_home)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "idle for 0.02 minutes" in out
    assert not (serve_home / "state" / "daemon.json").exists()
    assert not pid_running(proc.pid)


def test_state_file_contents(serve_home: Path) -> None:
    start_serve(serve_home)
    state = healthy_state(serve_home)
    raw = json.loads((serve_home / "state" / "daemon.json").read_text())
    assert raw["pid"] == state.pid and len(raw["token"]) >= 32 and raw["version"]
