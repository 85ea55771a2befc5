"""No git call of ours runs a program the repository configures (issue 12, item 4): a cloned
archive can carry any .git/config, .gitattributes and hooks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.daemon.support import make_repo, run_client


def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A committed repository whose .git/config, .gitattributes and hooks name programs that each
    leave a marker, and a `git` of its own in a folder PATH names relatively; then an edit that
    keeps the file's size but moves its mtime (what makes `git status` read the file through its
    clean filter)."""
    markers = tmp_path / "ran"
    markers.mkdir()
    repo = make_repo(tmp_path / "proj")
    (repo / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)

    def leaves(name: str) -> str:
        return f"touch {markers / name}; cat"

    for key, value in (
        ("filter.evil.clean", leaves("clean")),
        ("filter.evil.smudge", leaves("smudge")),
        ("diff.evil.textconv", f"touch {markers / 'textconv'}; cat"),
        ("diff.external", f"touch {markers / 'external'}; true"),
        ("core.fsmonitor", f"{markers}/../fsmonitor.sh"),
    ):
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    fsmonitor = tmp_path / "fsmonitor.sh"
    fsmonitor.write_text(f"#!/bin/sh\ntouch {markers / 'fsmonitor'}\n")
    fsmonitor.chmod(0o755)
    for hook in ("post-index-change", "post-checkout", "pre-commit", "reference-transaction"):
        path = repo / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch {markers / 'hook'}\n")
        path.chmod(0o755)
    bin_dir = repo / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f"#!/bin/sh\ntouch {markers / 'git-in-path'}\nexit 1\n")
    (bin_dir / "git").chmod(0o755)
    time.sleep(0.05)
    source = repo / "src" / "client.py"
    text = source.read_text()
    source.write_text(text.replace("def ", "def ", 1)[:-1] + "\n")  # same size, new mtime
    os.utime(source, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    return repo, markers


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    repo, markers = hostile_repo(tmp_path)
    # the programs really run when plain git reads contents (so an empty `markers` below means
    # something): `git status` as the old client ran it runs three of them (a `process` filter
    # would run like `clean`; it is left out because git stops at its failed handshake)
    subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, check=True)
    assert {"clean", "fsmonitor", "hook"} <= set(ran(markers))
    for marker in markers.iterdir():
        marker.unlink()
    return repo, markers


def ran(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def with_relative_path() -> str:
    return os.pathsep.join(["bin", os.environ["PATH"]])  # `bin` relative to the repository


def test_ai_search_and_qmd_warm_run_nothing_the_repository_configures(
    daemon_home: Path, hostile: tuple[Path, Path]
) -> None:
    repo, markers = hostile
    # the first call registers the root, the second compares with the stamp; then the same with a
    # PATH that would find the repository's own `git` first
    for path in (os.environ["PATH"], os.environ["PATH"], with_relative_path()):
        proc = run_client("ai_search.py", "parse cookie header", home=daemon_home, cwd=repo, PATH=path)
        assert proc.returncode == 0, proc.stderr
        assert ran(markers) == []
    warm = run_client("qmd_warm.py", "--foreground", "--repo", str(repo), home=daemon_home, cwd=repo,
                      PATH=with_relative_path())
    assert warm.returncode == 0
    assert "refresh done" in (daemon_home / "state" / "logs" / "warm.log").read_text()
    assert ran(markers) == []


def test_collection_add_and_update_run_nothing_the_repository_configures(
    tmp_path: Path, hostile: tuple[Path, Path]
) -> None:
    repo, markers = hostile
    env = dict(os.environ, QMD_DAEMON_HOME=str(tmp_path / "cli-home"), PATH=with_relative_path())

    def cli(*args: str) -> str:  # run from inside the repository, as a user does
        proc = subprocess.run([sys.executable, "-c", "from qmd_daemon.cli import main; main()", *args],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    cli("collection", "add", str(repo))
    (repo / "src" / "new.py").write_text("def added_later():\n    return 1\n")
    cli("update")
    assert "src/new.py" in cli("search", "added_later", "--json")
    assert ran(markers) == []
