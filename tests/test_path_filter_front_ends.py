"""`--path` as a user passes it: `qmd-daemon search`, `ai-search` (through a real daemon and the
in-process fallback) and the daemon's search request; real subprocesses, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qmd_daemon.daemon.api import parse_search
from qmd_daemon.errors import UsageError
from tests.conftest import run_cli
from tests.daemon.support import make_repo, run_client, state_of

QUESTION = "parse cookie header"  # src/client.py defines it, docs/guide.md explains it


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_the_cli_searches_only_the_files_the_patterns_allow(home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    run_cli("collection", "add", str(repo), "--name", "proj", env_home=home, check=True)

    def files(*args: str) -> list[str]:
        proc = run_cli("search", *args, "--format", "files", env_home=home, check=True)
        return proc.stdout.split()

    assert files(QUESTION) == ["proj:src/client.py", "proj:docs/guide.md"]
    assert files(QUESTION, "--path", "docs/") == ["proj:docs/guide.md"]
    assert files(QUESTION, "--path", "*.py", "--path", "!src/") == []
    assert files(f"{QUESTION} -path:docs/") == ["proj:src/client.py"]
    assert files(QUESTION, "--path", "docs\\") == ["proj:docs/guide.md"]  # a Windows path's separator
    proc = run_cli("search", QUESTION, "--path", "scr/", "--format", "files", env_home=home)
    assert proc.returncode == 0 and proc.stdout.split() == []  # a typo: no file matches, and it says so
    assert "no indexed file matches the --path patterns" in _one_line(proc.stderr)
    assert "root, e.g. 'src/'" in proc.stderr  # examples, not the patterns given
    for bad in (["--path", "src/["], ["--path", "!"]):
        proc = run_cli("search", QUESTION, *bad, env_home=home)
        assert proc.returncode == 2 and "bad path pattern" in _one_line(proc.stderr)
    proc = run_cli("search", f"path:src/[ {QUESTION}", env_home=home)
    assert proc.returncode == 2 and "bad path pattern 'src/['" in _one_line(proc.stderr)


def test_ai_search_passes_its_patterns_to_the_daemon_and_the_fallback(
    daemon_home: Path, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "proj")

    def search(*args: str) -> list[str]:
        proc = run_client("ai_search.py", QUESTION, *args, home=daemon_home, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        return [hit["path"] for hit in json.loads(proc.stdout)]

    assert search("--path", "docs/", "--no-daemon") == ["docs/guide.md"]
    assert search("--no-daemon") == ["src/client.py", "docs/guide.md"]
    for extra in (["--no-daemon"], []):
        proc = run_client("ai_search.py", QUESTION, "--path", "src/[", *extra, home=daemon_home, cwd=repo)
        assert proc.returncode == 2 and proc.stdout == ""
        assert _one_line(proc.stderr).startswith("ai-search: error: bad path pattern")
    assert state_of(daemon_home) is not None  # the last one went through the daemon
    assert search("--path", "docs/") == ["docs/guide.md"]
    assert search("--path", "!docs/") == ["src/client.py"]
    for extra in (["--no-daemon"], []):  # an empty answer the patterns made says so, either way
        proc = run_client("ai_search.py", QUESTION, "--path", "scr/", *extra, home=daemon_home, cwd=repo)
        assert proc.returncode == 0 and json.loads(proc.stdout) == []
        assert "no indexed file matches the --path patterns" in _one_line(proc.stderr)
        assert "root, e.g. 'src/'" in proc.stderr  # it read "(relative to the repository root: 'src/', ...)"


@pytest.mark.parametrize("paths", ["src/", [3], ["src/["], [""]])
def test_the_daemon_refuses_a_bad_paths_field_before_searching(paths: object) -> None:
    with pytest.raises(UsageError) as refused:
        parse_search({"query": "x", "paths": paths})
    assert refused.value.http_status == 400 and refused.value.code == "bad_request"
    assert parse_search({"query": "x", "paths": ["src/", "!*.md"]}).options.paths == ("src/", "!*.md")
