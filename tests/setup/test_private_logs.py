"""Every log qmd-daemon writes is owner-only, like the other state files.

Walked on a fresh HOME (first-hour-9): after `install.sh` and a first `ai-search`, every state
file was 0600 but `logs/` was 0755 and setup.log, daemon.log, warm.log and hooks.log 0644 (they
name the user's repositories, folders and failed prompts). Real files, the real hook script run
by sh, the real clients module.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qmd_daemon.setup import progress
from qmd_daemon.setup.integrations import git_hook_block
from qmd_daemon.setup.paths import SetupPaths

REPO_ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_setup_log_is_private_even_when_an_earlier_run_left_it_readable(tmp_path: Path) -> None:
    log = tmp_path / "state" / "logs" / "setup.log"
    progress.run_with_progress(
        [sys.executable, "-c", "print('one')"], "say one", log=log, echo=lambda _: None
    )
    assert (_mode(log.parent), _mode(log)) == (0o700, 0o600)
    log.chmod(0o644)
    progress.run_with_progress(
        [sys.executable, "-c", "print('two')"], "say two", log=log, echo=lambda _: None
    )
    assert _mode(log) == 0o600 and log.read_text().endswith("two\n")


def test_the_clients_logs_are_private_and_so_is_a_log_folder_left_readable(tmp_path: Path) -> None:
    logs = tmp_path / "home" / "state" / "logs"
    logs.mkdir(parents=True, mode=0o755)
    logs.chmod(0o755)
    (logs / "daemon.log").write_text("older\n")
    (logs / "daemon.log").chmod(0o644)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import _qmd_client as qc\n"
        "for name in ('daemon.log', 'warm.log'):\n"
        "    with qc.log_file(name) as handle: handle.write(b'line\\n')\n"
    )
    env = dict(os.environ, QMD_DAEMON_HOME=str(tmp_path / "home"))
    subprocess.run([sys.executable, "-c", code, str(REPO_ROOT / "clients")], env=env, check=True)
    assert _mode(logs) == 0o700
    assert [_mode(logs / n) for n in ("daemon.log", "warm.log")] == [0o600, 0o600]
    assert (logs / "daemon.log").read_text() == "older\nline\n"


def test_the_session_start_hook_writes_a_private_hooks_log(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QMD_", "CLAUDE_"))}
    env.update(QMD_DAEMON_HOME=str(tmp_path / "qmd"), QMD_WARM=str(tmp_path / "none"), PATH="/usr/bin:/bin")
    subprocess.run(
        ["sh", str(REPO_ROOT / "hooks" / "qmd-session-start.sh")],
        cwd=repo, env=env, input="{}", text=True, check=True, timeout=10,
    )  # fmt: skip
    logs = tmp_path / "qmd" / "state" / "logs"
    assert "qmd-warm not found" in (logs / "hooks.log").read_text()
    assert (_mode(logs), _mode(logs / "hooks.log")) == (0o700, 0o600)


def test_the_post_commit_block_writes_a_private_hooks_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "qmd"))
    monkeypatch.setenv("QMD_SETUP_BIN_DIR", str(tmp_path / "bin"))  # no qmd-warm there: it fails
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    hook = tmp_path / "post-commit"
    hook.write_text("#!/bin/sh\n" + git_hook_block(SetupPaths.from_env()))
    subprocess.run(["sh", str(hook)], cwd=repo, check=True, timeout=10)
    log = tmp_path / "qmd" / "state" / "logs" / "hooks.log"
    deadline = time.monotonic() + 30  # the block's work runs in the background
    while not (log.exists() and log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "qmd-warm" in log.read_text()  # sh's "not found" for the missing wrapper
    assert (_mode(log.parent), _mode(log)) == (0o700, 0o600)
