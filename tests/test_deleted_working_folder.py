"""A terminal whose folder was deleted (or moved away) beneath it: `rm -rf` of a checkout, a
worktree pruned. `ai-search` printed a traceback (getcwd failed), `qmd-daemon status` said only
`No such file or directory`, and `qmd-warm` logged the same; none of them needs that folder."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_cli
from tests.daemon.support import CLIENTS, env_for, make_repo


def _in_deleted_folder(folder: Path, home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run argv in `folder` after deleting it, as a shell left in it would."""
    script = f"cd {shlex.quote(str(folder))} && rm -rf {shlex.quote(str(folder))} && exec {shlex.join(argv)}"
    return subprocess.run(["sh", "-c", script], env=env_for(home), capture_output=True, text=True, timeout=90)


def test_commands_in_a_deleted_folder_say_so_in_one_line(home: Path, tmp_path: Path) -> None:
    kept = make_repo(tmp_path / "kept")
    run_cli("collection", "add", str(kept), env_home=home, check=True)
    ai_search = [sys.executable, str(CLIENTS / "ai_search.py")]
    proc = _in_deleted_folder(make_repo(tmp_path / "a"), home, *ai_search, "x")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (
        "ai-search: error: the current folder no longer exists (moved or deleted?): "
        "cd into the repository again, or pass --repo DIR"
    )
    cli = [sys.executable, "-c", "from qmd_daemon.cli import main; main()"]
    status = _in_deleted_folder(make_repo(tmp_path / "b"), home, *cli, "status")
    assert status.returncode == 0, status.stderr
    assert "repo-kept: 3 files" in status.stdout and "(this repository)" not in status.stdout
    warm = _in_deleted_folder(make_repo(tmp_path / "c"), home, sys.executable, str(CLIENTS / "qmd_warm.py"),
                              "--foreground")  # fmt: skip
    assert warm.returncode == 0  # a hook never fails a session; its log says why it did nothing
    log = (home / "state" / "logs" / "warm.log").read_text()
    assert "the current folder no longer exists" in log and "FileNotFoundError" not in log
