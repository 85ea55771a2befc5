"""`ai-search` and `qmd-warm` in a folder nobody registered and that is not a git repository
register and index nothing (issue 13): an 8.5 GB folder was indexed for minutes, and a home
subfolder (~/.config, secrets included) would be too (issue 12 item 7)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.conftest import run_cli, write_tree
from tests.daemon.support import make_repo, run_client, state_of, wait_for


def collections(home: Path, user_home: Path) -> list[str]:
    out = run_cli("collection", "list", "--json", env_home=home, HOME=str(user_home), check=True).stdout
    return [row["name"] for row in json.loads(out)]


def test_a_plain_folder_is_not_indexed_until_registered(daemon_home: Path, tmp_path: Path) -> None:
    user_home = tmp_path / "alice"
    folder = write_tree(tmp_path / "downloads", {"notes.py": "def parse_cookie_header():\n    pass\n"})
    proc = run_client("ai_search.py", "parse cookie", home=daemon_home, cwd=folder, HOME=str(user_home))
    assert proc.returncode != 0 and proc.stdout == ""
    # the exit status the skill tells agents to expect (it said 1; a refusal is a usage error, 2)
    skill = (Path(__file__).parents[2] / "skills" / "semantic-search" / "SKILL.md").read_text("utf-8")
    said = re.search(r"Outside a git repository.*? it exits (\d+) with one stderr line", skill, re.S)
    assert said is not None and proc.returncode == int(said.group(1))
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a git repository" in lines[0]
    assert f"qmd-daemon collection add {folder.resolve()}" in lines[0]
    assert collections(daemon_home, user_home) == []
    # the in-process search (no daemon) says the same
    proc = run_client("ai_search.py", "parse cookie", "--no-daemon", home=daemon_home, cwd=folder,
                      HOME=str(user_home))
    assert proc.returncode != 0 and "qmd-daemon collection add" in proc.stderr
    # once registered, it answers
    run_cli("collection", "add", str(folder), env_home=daemon_home, HOME=str(user_home), check=True)
    proc = run_client("ai_search.py", "parse cookie", home=daemon_home, cwd=folder, HOME=str(user_home))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["path"] == "notes.py"
    wait_for(lambda: state_of(daemon_home), timeout=60)  # the one started for next time: stopped at teardown


def test_config_folders_are_refused_even_as_repositories(daemon_home: Path, tmp_path: Path) -> None:
    user_home = tmp_path / "alice"
    secret = write_tree(user_home / ".config" / "gh", {"hosts.yml": "oauth_token: gho_secret\n"})
    dotfiles = make_repo(user_home / ".config" / "nvim", {"init.py": "def setup_editor():\n    pass\n"})
    for folder in (secret, dotfiles):
        proc = run_client("ai_search.py", "oauth token", home=daemon_home, cwd=folder, HOME=str(user_home))
        assert proc.returncode != 0 and proc.stdout == ""
        assert "holds settings" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert collections(daemon_home, user_home) == []


def test_qmd_warm_in_a_plain_folder_registers_nothing(daemon_home: Path, tmp_path: Path) -> None:
    user_home = tmp_path / "alice"
    folder = write_tree(tmp_path / "downloads", {"notes.py": "def f():\n    pass\n"})
    proc = run_client("qmd_warm.py", "--foreground", "--repo", str(folder), home=daemon_home, cwd=folder,
                      HOME=str(user_home))
    assert proc.returncode == 0  # a hook never fails a session
    log = daemon_home / "state" / "logs" / "warm.log"
    wait_for(lambda: log.exists() and "not a git repository" in log.read_text(), timeout=10)
    assert collections(daemon_home, user_home) == []
    assert subprocess.run(["git", "-C", str(folder), "rev-parse"], capture_output=True).returncode != 0


def test_no_daemon_is_started_only_to_refuse_a_plain_folder(daemon_home: Path, tmp_path: Path) -> None:
    """A daemon started to say "not a git repository" loaded the models and idled for 30 minutes;
    the one-off process says it. A registered folder is answered at once and warms one for next time."""
    user_home = tmp_path / "alice"
    folder = write_tree(tmp_path / "downloads", {"notes.py": "def parse_cookie_header():\n    pass\n"})
    proc = run_client("ai_search.py", "parse cookie", home=daemon_home, cwd=folder, HOME=str(user_home))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "not a git repository" in proc.stderr
    assert state_of(daemon_home) is None and not (daemon_home / "state" / "spawn.marker").exists()
    run_cli("collection", "add", str(folder), env_home=daemon_home, HOME=str(user_home), check=True)
    first = run_client("ai_search.py", "parse cookie", home=daemon_home, cwd=folder, HOME=str(user_home),
                       QMD_TIMING="1")  # fmt: skip
    assert first.returncode == 0 and json.loads(first.stdout)[0]["path"] == "notes.py", first.stderr
    assert '"in_process": true' in first.stderr
    wait_for(lambda: state_of(daemon_home), timeout=60)  # started in the background, for the next call
    again = run_client("ai_search.py", "parse cookie", home=daemon_home, cwd=folder, HOME=str(user_home),
                       QMD_TIMING="1")  # fmt: skip
    assert again.returncode == 0 and json.loads(again.stdout)[0]["path"] == "notes.py", again.stderr
    assert '"in_process": null' in again.stderr
