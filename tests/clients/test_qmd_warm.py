"""`qmd-warm`: returns at once, warms the repository in the background, one warm per repository."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from qmd_daemon.locks import file_lock, writer_lock_path
from qmd_daemon.settings import Settings
from tests.daemon.support import make_repo, run_client, state_of, wait_for


def test_warm_detaches_and_warms(daemon_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path / "proj")
    monkeypatch.setenv("QMD_DAEMON_HOME", str(daemon_home))
    log = daemon_home / "state" / "logs" / "warm.log"
    # Returns before the warm is done, by an event, not a clock: while this test holds the index's
    # writer lock no refresh can finish, so a qmd-warm that exits meanwhile did not wait for one.
    writer = file_lock(writer_lock_path(Settings.from_env().index_path))
    with writer:
        proc = run_client("qmd_warm.py", "--repo", str(repo), home=daemon_home, cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
        assert not log.exists() or "refresh done" not in log.read_text()
    wait_for(lambda: log.exists() and "refresh done" in log.read_text(), timeout=40)
    wait_for(lambda: "embed done" in log.read_text() or "embed failed" in log.read_text(), timeout=20)
    assert state_of(daemon_home) is not None
    stamps = list((daemon_home / "state" / "repos").glob("proj-*.json"))
    assert len(stamps) == 1 and json.loads(stamps[0].read_text())["root"] == str(repo.resolve())
    wait_for(lambda: not list((daemon_home / "state" / "warm").glob("*.lock")), timeout=10)


def test_one_warm_per_repository(daemon_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from clients import qmd_warm

    repo = make_repo(tmp_path / "proj")
    monkeypatch.setenv("QMD_DAEMON_HOME", str(daemon_home))
    held = qmd_warm.take_lock(str(repo.resolve()))
    assert held is not None and qmd_warm.take_lock(str(repo.resolve())) is None
    proc = run_client("qmd_warm.py", "--foreground", "--repo", str(repo), home=daemon_home, cwd=tmp_path)
    assert proc.returncode == 0
    log = daemon_home / "state" / "logs" / "warm.log"
    assert "already warming" in log.read_text()
    assert state_of(daemon_home) is None  # it did nothing: no daemon, no jobs
    old = time.time() - 2 * qmd_warm.LOCK_STALE_S  # its holder died: the lock goes stale
    os.utime(held, (old, old))
    proc = run_client("qmd_warm.py", "--foreground", "--repo", str(repo), home=daemon_home, cwd=tmp_path)
    assert proc.returncode == 0 and "refresh done" in log.read_text()
    assert not Path(held).exists()


def test_warm_never_fails(daemon_home: Path, tmp_path: Path) -> None:
    proc = run_client(
        "qmd_warm.py",
        "--foreground",
        "--repo",
        str(tmp_path),
        home=daemon_home,
        cwd=tmp_path,
        QMD_DAEMON_PYTHON="/nonexistent/python",
        QMD_START_TIMEOUT="1",
    )
    assert proc.returncode == 0
    assert "qmd-warm failed" in (daemon_home / "state" / "logs" / "warm.log").read_text()


def test_no_daemon_is_started_after_daemons_crashed_in_a_row(daemon_home: Path, tmp_path: Path) -> None:
    """The clients' crash back-off (clients/_qmd_client.py backing_off): the hook's warm starts no
    daemon either, and its log says why rather than `qmd-warm failed: DaemonBackingOff: ...`."""
    from clients import _qmd_client as qc

    repo = make_repo(tmp_path / "proj")
    record = daemon_home / "state" / qc.CRASH_FILE
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"at": time.time(), "pid": 1, "reason": "", "crashes": 2}))
    proc = run_client("qmd_warm.py", "--foreground", "--repo", str(repo), home=daemon_home, cwd=tmp_path)
    assert proc.returncode == 0
    said = (daemon_home / "state" / "logs" / "warm.log").read_text()
    assert f"{repo.resolve()}: not warming: the daemon crashed twice in a row, last at " in said, said
    assert state_of(daemon_home) is None and not (daemon_home / "state" / "logs" / "daemon.log").exists()


def test_a_daemon_stopped_while_warming_is_said_plainly(
    daemon_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon a warm follows is stopped (an upgrade's installer, a newer client replacing it):
    warm.log says so and what picks the work up, not `qmd-warm failed: NotTheDaemon: ...`."""
    from qmd_daemon.daemon.stop import stop_daemon

    repo = make_repo(tmp_path / "proj")
    monkeypatch.setenv("QMD_DAEMON_HOME", str(daemon_home))
    log = daemon_home / "state" / "logs" / "warm.log"
    settings = Settings.from_env()
    with file_lock(writer_lock_path(settings.index_path)):  # the refresh cannot finish: still followed
        run_client("qmd_warm.py", "--repo", str(repo), home=daemon_home, cwd=tmp_path)
        wait_for(lambda: log.exists() and "; jobs job-" in log.read_text(), timeout=40)
        assert stop_daemon(settings.state_dir) is not None
    wait_for(lambda: "stopped before these jobs finished" in log.read_text(), timeout=30)
    assert "qmd-warm failed" not in log.read_text()


def test_a_config_error_is_logged_as_the_config_line(daemon_home: Path, tmp_path: Path) -> None:
    """The daemon refuses the warm with index.yml's own line (409 config_error: here the
    repository's collection has a mask today's rules refuse): warm.log holds that line, what the
    user fixes, not `qmd-warm failed: DaemonError: ...`; the hook still exits 0."""
    repo = make_repo(tmp_path / "proj")
    (daemon_home / "config").mkdir(parents=True)
    (daemon_home / "config" / "index.yml").write_text(
        f"collections:\n  repo-proj:\n    path: {repo.resolve()}\n    pattern: '**/*.py['\n"
    )
    proc = run_client("qmd_warm.py", "--foreground", "--repo", str(repo), home=daemon_home, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    logged = (daemon_home / "state" / "logs" / "warm.log").read_text()
    assert "qmd-warm failed" not in logged and "DaemonError" not in logged, logged
    assert f"{repo.resolve()}: collection 'repo-proj' is skipped: its mask" in logged, logged
    assert len(logged.strip().splitlines()) == 1


def _on_a_terminal(home: Path, cwd: Path, *args: str, **env: str) -> tuple[int, str]:
    """qmd-warm with its stderr a terminal, as a user runs it by hand: its exit status and what
    the terminal showed."""
    import pty
    import subprocess
    import sys

    from tests.daemon.support import CLIENTS, env_for

    terminal, child_end = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, str(CLIENTS / "qmd_warm.py"), *args],
            cwd=cwd, env=env_for(home, **env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=child_end,
        )
        os.close(child_end)
        shown = b""
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # EIO: the child's end closed
                break
            if not chunk:
                break
            shown += chunk
        return proc.wait(timeout=60), shown.decode()
    finally:
        os.close(terminal)


def test_a_run_by_hand_says_on_the_terminal_what_it_logs(daemon_home: Path, tmp_path: Path) -> None:
    # `qmd-warm --repo /nonexistent` (as docs/usage.md lists the command) printed nothing and exited
    # 0; the reason was only in warm.log. A hook's stderr is a log file: it still prints nothing.
    no_daemon = {"QMD_DAEMON_PYTHON": "/nonexistent/python", "QMD_START_TIMEOUT": "1"}
    code, shown = _on_a_terminal(daemon_home, tmp_path, "--foreground", "--repo", str(tmp_path), **no_daemon)
    assert code == 0 and "qmd-warm failed" in shown, shown
    code, shown = _on_a_terminal(daemon_home, tmp_path, "--repo", str(tmp_path), **no_daemon)
    assert code == 0 and f"warming {tmp_path.resolve()} in the background" in shown and "warm.log" in shown
