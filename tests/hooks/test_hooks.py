"""The SessionStart hook returns at once (before the warm it starts ends) and starts a warm that indexes; the
opt-in UserPromptSubmit hook adds only high-scoring hits within its caps and never fails."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import BOX_PY, SAMPLE_GO, SAMPLE_MD, SAMPLE_PY, write_tree

REPO_ROOT = Path(__file__).resolve().parents[2]
SESSION_HOOK = REPO_ROOT / "hooks" / "qmd-session-start.sh"
RETRIEVE_HOOK = REPO_ROOT / "hooks" / "qmd-auto-retrieve.py"


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _git_repo(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "retry.py").write_text('def retry_with_backoff(call, attempts=3):\n    """Retry a call."""\n')
    (root / "README.md").write_text("# Demo\n\nRetries use exponential backoff.\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    return root


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QMD_", "CLAUDE_", "HF_"))}
    env.update(QMD_DAEMON_HOME=str(tmp_path / "qmd"), HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    env.update(extra)
    return env


def _run_hook(cwd: Path, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["sh", str(SESSION_HOOK)],
        cwd=cwd,
        env=env,
        input='{"source": "startup"}',
        capture_output=True,
        text=True,
        timeout=60,  # a ceiling: the hook returns at once
    )
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    return elapsed


def _wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_outside_a_git_repository_the_hook_does_nothing(tmp_path):
    marker = tmp_path / "warmed"
    warm = _script(tmp_path / "qmd-warm", f'touch "{marker}"\n')
    plain = tmp_path / "plain"
    plain.mkdir()
    _run_hook(plain, _env(tmp_path, QMD_WARM=str(warm), GIT_CEILING_DIRECTORIES=str(tmp_path)))
    time.sleep(0.3)
    assert not marker.exists()


def test_session_start_logs_under_a_home_given_with_a_tilde(tmp_path):
    # QMD_DAEMON_HOME="~/..." from an agent's settings file, unexpanded: the hook made a folder
    # named ~ inside the user's repository for its log
    repo = _git_repo(tmp_path / "repo")
    _run_hook(repo, _env(tmp_path, QMD_DAEMON_HOME="~/qmd-tilde", HOME=str(tmp_path), QMD_WARM="/nonexistent",
                         PATH="/usr/bin:/bin"))
    assert "qmd-warm not found" in (tmp_path / "qmd-tilde/state/logs/hooks.log").read_text()
    assert not (repo / "~").exists()


def test_hook_returns_without_waiting_for_the_warm(tmp_path):
    repo = _git_repo(tmp_path / "repo")
    marker, go = tmp_path / "warmed", tmp_path / "go"
    # a qmd-warm that keeps stdout open and ends only when the test says so: the hook must neither
    # wait for it nor hold a pipe (subprocess.run would wait for that pipe's end)
    waits = f'while [ ! -e "{go}" ]; do sleep 0.05; done\n'
    warm = _script(tmp_path / "qmd-warm", waits + f'echo "$@" > "{marker}"\n')
    env = _env(tmp_path, QMD_WARM=str(warm))
    times = [_run_hook(repo, env) for _ in range(5)]
    assert not marker.exists(), "every hook returned while its warm still ran"
    print(f"hook: median {statistics.median(times) * 1000:.0f} ms (a figure: the box may be loaded)")
    go.touch()
    # `>` creates the file before echo writes it: wait for the content, not the file
    assert _wait_for(lambda: marker.exists() and marker.read_text().strip(), 60)
    assert marker.read_text().split() == ["--repo", str(repo.resolve())]


def test_missing_qmd_warm_is_logged_not_failed(tmp_path):
    repo = _git_repo(tmp_path / "repo")
    env = _env(tmp_path, QMD_WARM=str(tmp_path / "nope"), PATH="/usr/bin:/bin")
    _run_hook(repo, env)
    assert "qmd-warm not found" in (tmp_path / "qmd/state/logs/hooks.log").read_text()


def _stop_daemon(state_dir: Path) -> None:
    with contextlib.suppress(OSError, ValueError, KeyError):
        pid = int(json.loads((state_dir / "daemon.json").read_text())["pid"])
        os.kill(pid, signal.SIGTERM)


def test_session_start_starts_a_warm_that_indexes_the_repository(tmp_path):
    repo = _git_repo(tmp_path / "repo")
    warm = _script(tmp_path / "qmd-warm", f'exec "{sys.executable}" "{REPO_ROOT}/clients/qmd_warm.py" "$@"\n')
    env = _env(tmp_path, QMD_WARM=str(warm), QMD_IDLE_MINUTES="1", QMD_DAEMON_PYTHON=sys.executable)
    _run_hook(repo, env)
    cli = [sys.executable, "-c", "from qmd_daemon.cli import main; main()", "collection", "list", "--json"]

    def indexed() -> bool:
        proc = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=60)
        rows = json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else []
        return any(r["path"] == str(repo.resolve()) and r["files"] >= 2 for r in rows)

    try:
        assert _wait_for(indexed, 90), (tmp_path / "qmd/state/logs").glob("*")
    finally:
        _stop_daemon(tmp_path / "qmd" / "state")


def _retrieve(
    tmp_path: Path, hits_json: str, exit_code: int = 0, **extra: str
) -> subprocess.CompletedProcess:
    """The hook against a stand-in `ai-search` that prints HITS_JSON: the threshold and the token
    cap need exact scores, which a real search does not promise. The real ai-search is below."""
    search = _script(tmp_path / "ai-search", f"cat <<'EOF'\n{hits_json}\nEOF\nexit {exit_code}\n")
    env = _env(tmp_path, QMD_AI_SEARCH=str(search), **extra)
    prompt = {"prompt": "where are failed requests retried with backoff", "cwd": str(tmp_path)}
    return subprocess.run(
        [sys.executable, str(RETRIEVE_HOOK)],
        input=json.dumps(prompt),
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
    )


def test_auto_retrieve_adds_only_high_scoring_hits_as_additional_context(tmp_path):
    hits = [
        {
            "path": "src/retry.py",
            "line": 3,
            "end_line": 9,
            "score": 0.91,
            "snippet": "def retry():",
            "collection": "r",
        },
        {
            "path": "docs/x.md",
            "line": 1,
            "end_line": 4,
            "score": 0.40,
            "snippet": "unrelated",
            "collection": "r",
        },
    ]
    proc = _retrieve(tmp_path, json.dumps(hits))
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    assert "src/retry.py:3-9" in out["additionalContext"] and "docs/x.md" not in out["additionalContext"]
    capped = _retrieve(tmp_path, json.dumps(hits), QMD_AUTO_RETRIEVE_MAX_TOKENS="10")
    assert capped.stdout == ""  # nothing fits in the token cap: no context at all


def test_auto_retrieve_never_fails_a_prompt(tmp_path):
    proc = _retrieve(tmp_path, "not json", exit_code=3)
    assert proc.returncode == 0 and proc.stdout == ""
    slow = _retrieve(tmp_path, "[]", QMD_AUTO_RETRIEVE_TIMEOUT="0.01")
    assert slow.returncode == 0 and slow.stdout == ""


def test_auto_retrieve_logs_under_a_home_given_with_a_tilde(tmp_path):
    # an agent's settings file sets QMD_DAEMON_HOME="~/..." unexpanded: the log went to a folder
    # named `~` in whatever folder the hook ran from (the clients expand it)
    search = _script(tmp_path / "ai-search", "echo 'not json'\nexit 3\n")
    env = _env(tmp_path, QMD_AI_SEARCH=str(search), QMD_DAEMON_HOME="~/qmd-tilde", HOME=str(tmp_path))
    ran_in = tmp_path / "cwd"
    ran_in.mkdir()
    prompt = {"prompt": "where are failed requests retried with backoff", "cwd": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(RETRIEVE_HOOK)], input=json.dumps(prompt), env=env, cwd=ran_in,
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0 and proc.stdout == ""
    assert (tmp_path / "qmd-tilde/state/logs/hooks.log").read_text().strip()
    assert not (ran_in / "~").exists()


def test_auto_retrieve_with_the_real_ai_search_keeps_non_ascii_text(tmp_path):
    """The real ai-search (in-process: no daemon needed), with Windows' stream setup simulated
    (PYTHONIOENCODING=cp1252): the prompt and the snippet keep their box-drawing and CJK text."""
    repo = _git_repo(tmp_path / "repo")
    (repo / "box.py").write_text(BOX_PY, encoding="utf-8")
    client = REPO_ROOT / "clients" / "ai_search.py"
    search = _script(tmp_path / "ai-search", f'exec "{sys.executable}" "{client}" "$@"\n')
    env = _env(
        tmp_path,
        QMD_AI_SEARCH=str(search),
        QMD_NO_DAEMON="1",
        QMD_AUTO_RETRIEVE_MIN_SCORE="0",
        QMD_AUTO_RETRIEVE_TIMEOUT="90",
        PYTHONIOENCODING="cp1252",
    )
    prompt = {"prompt": "how is a box with \u250c\u2500\u2510 corners drawn", "cwd": str(repo)}
    proc = subprocess.run(
        [sys.executable, str(RETRIEVE_HOOK)],
        input=json.dumps(prompt, ensure_ascii=False).encode("utf-8"),
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "box.py:1-" in context and "\u250c\u2500\u2510" in context and "\u4e2d\u6587" in context


def _retrieve_module() -> Any:
    """The hook as the installer copies it (a file named with dashes, standard library only)."""
    spec = importlib.util.spec_from_file_location("qmd_auto_retrieve", RETRIEVE_HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_auto_retrieve_default_threshold_is_a_score_search_reaches(small_engine: Any, tmp_path: Path) -> None:
    """The default floor sits between "likely an answer" and the highest calibrated score: at 0.75
    it was above any score the calibration can give (about 0.66), so the hook never added a line."""
    from qmd_daemon.search.calibration import ANSWER_THRESHOLD, FEATURES, probability

    hook = _retrieve_module()
    floor = hook.MIN_SCORE_DEFAULT
    best_case = dict.fromkeys(FEATURES, 0.0) | {"relative": 1.0, "answered": 2.0, "similarity": 1.0}
    assert ANSWER_THRESHOLD < floor < probability(best_case)

    files = {"client.py": SAMPLE_PY, "pool/conn.go": SAMPLE_GO, "README.md": SAMPLE_MD}
    repo = write_tree(tmp_path / "proj", files)
    small_engine.add_collection(repo, "proj")
    small_engine.update()
    small_engine.embed(["proj"])
    hits = [h.to_dict() for h in small_engine.search("how is the cookie header parsed", ["proj"])]
    assert hits[0]["path"] == "client.py" and hits[0]["score"] >= floor, hits[:2]  # 0.53 here
    context = hook.context_for(hits, floor, 1200)
    assert "client.py:" in context and "parse_cookie_header" in context
    nonsense = [h.to_dict() for h in small_engine.search("xyzzy plugh frobozz sourdough", ["proj"])]
    assert hook.context_for(nonsense, floor, 1200) == ""  # silent when nothing scores high
