"""A bad value in index.yml's `models:` block is one line, the same from every entry point: the CLI,
the daemon's answer and the clients' in-process search. `profile: tiny` was the one that differed:
checked only when a model was built, it left every search lexical-only without a word (exit 0),
and `embed` said `unknown model profile` without naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.daemon.support import make_repo, run_client, state_of, stop_daemon

BAD = [
    ("device: quantum", "models.device must be one of auto, cpu, gpu, not 'quantum'"),
    ("embed: 5", "models.embed must be a model file or hf: reference, or off, not 5"),
    ("deep: maybe", "models.deep must be on or off, not 'maybe'"),
    ("static: maybe", "models.static must be on or off, not 'maybe'"),
    ("quantization: int4", "models.quantization must be one of float, int8, not 'int4'"),
    ("profile: tiny", "models.profile must be one of qwen3, small, not 'tiny'"),
]


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.fixture
def repo(home: Path, tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"a.py": "def walrus():\n    return 1\n"})
    run_cli("collection", "add", str(repo), env_home=home, check=True)
    return repo


@pytest.mark.parametrize(("line", "error"), BAD)
def test_the_cli_and_the_in_process_search_say_the_same_line(
    home: Path, repo: Path, line: str, error: str
) -> None:
    config = home / "config" / "index.yml"
    config.write_text(config.read_text() + f"models:\n  {line}\n")
    said = f"{config}: {error} (left untouched)"
    for command in (("search", "walrus"), ("embed",)):
        proc = run_cli(*command, env_home=home)
        assert proc.returncode != 0 and _one_line(proc.stderr) == f"qmd-daemon: error: {said}"
    proc = run_client("ai_search.py", "walrus", home=home, cwd=repo, QMD_NO_DAEMON="1")
    assert proc.returncode != 0 and _one_line(proc.stderr) == f"ai-search: error: {said}"


def test_the_daemon_answers_the_same_line(home: Path, repo: Path) -> None:
    config = home / "config" / "index.yml"
    config.write_text(config.read_text() + "models:\n  profile: tiny\n")
    try:
        proc = run_client("ai_search.py", "walrus", home=home, cwd=repo)
        assert state_of(home) is not None  # a daemon was started, and answered
    finally:
        stop_daemon(home)
    said = f"{config}: models.profile must be one of qwen3, small, not 'tiny' (left untouched)"
    assert proc.returncode != 0 and _one_line(proc.stderr) == f"ai-search: error: {said}"
