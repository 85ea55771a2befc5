"""The optional post-commit refresh hook, in real temporary git repositories with real commits:
no hook yet, an existing shell hook (install + remove gives its bytes back), a python hook left
alone, core.hooksPath (relative, and `~`), and a hook that never blocks or fails a commit."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from qmd_daemon.setup import integrations as integ
from qmd_daemon.setup.journal import Journal
from qmd_daemon.setup.paths import SetupPaths
from tests.daemon.support import pid_running
from tests.setup.conftest import listing, run_install, setup_paths, yes_small

# A stand-in for the installed qmd-warm wrapper: records its arguments, whether git's
# repository-local variables reached it, and its pid; optionally sleeps, then fails.
WARM_STUB = """#!/bin/sh
echo "args=$* index=${{GIT_INDEX_FILE:-unset}} dir=${{GIT_DIR:-unset}}" > "{out}.tmp"
sleep "${{QMD_TEST_WARM_SLEEP:-0}}" &
echo "$!" > "{out}.pid"
mv "{out}.tmp" "{out}"
wait
exit 1
"""


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    for args in (
        ("init", "-q"),
        ("config", "user.email", "t@example.com"),
        ("config", "user.name", "t"),
        ("config", "commit.gpgsign", "false"),
    ):
        assert _git(path, *args).returncode == 0
    return path


def _commit(repo: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    name = f"f{time.monotonic_ns()}.txt"
    (repo / name).write_text("x\n")
    assert _git(repo, "add", name).returncode == 0
    return _git(repo, "commit", "-q", "-m", "c", env=env)


def _wait_for(path: Path, seconds: float = 60) -> str:  # a ceiling: the hook starts it at once
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared: the hook did not start qmd-warm")


def _stop(out: Path) -> None:
    """End the stub's sleep (by the pid it recorded), if it still runs: the stub then exits."""
    pid_file = Path(f"{out}.pid")
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)


@pytest.fixture
def paths(tmp_path: Path) -> SetupPaths:
    p = setup_paths(tmp_path / "home")
    p.bin_dir.mkdir(parents=True)
    return p


@pytest.fixture
def warm(paths: SetupPaths, tmp_path: Path):
    out = tmp_path / "warm-ran"
    stub = integ.wrapper_path(paths, "qmd-warm")
    stub.write_text(WARM_STUB.format(out=out))
    stub.chmod(0o755)
    yield out
    _stop(out)


def _journal(lines: list[str]) -> Journal:
    return Journal(echo=lines.append)


def test_no_hook_yet_creates_one_that_refreshes_and_removal_deletes_it(paths, warm, tmp_path):
    repo = _repo(tmp_path / "repo")
    journal = _journal([])
    assert integ.install_git_hook(journal, paths, repo)
    hook = repo / ".git" / "hooks" / "post-commit"
    assert hook.read_text() == "#!/bin/sh\n" + integ.git_hook_block(paths)
    assert hook.stat().st_mode & stat.S_IXUSR
    proc = _commit(repo)
    assert proc.returncode == 0, proc.stderr
    # the repository's top level, and none of git's repository-local variables leak into the daemon
    assert _wait_for(warm) == f"args=--repo {repo} index=unset dir=unset\n"
    integ.remove_git_hook(_journal([]), repo, {str(p) for p in journal.created_files})
    assert not hook.exists()


USER_HOOKS = [
    "#!/bin/sh\necho user >> {marker}\nexit 0\n",  # ends in exit: our block must run before it
    "#!/usr/bin/env bash\nset -euo pipefail\necho user >> {marker}\n",
    "#!/bin/bash -e\r\necho user >> {marker}\n",  # CRLF on the #! line, kept as is
    "echo user >> {marker}\n",  # no #! line at all: git runs it with sh
    "#!/bin/sh\necho user >> {marker}",  # no final newline
]


@pytest.mark.parametrize("template", USER_HOOKS)
def test_existing_shell_hook_gets_a_block_and_comes_back_byte_identical(paths, warm, tmp_path, template):
    repo = _repo(tmp_path / "repo")
    marker = tmp_path / "user-hook-ran"
    hook = repo / ".git" / "hooks" / "post-commit"
    original = template.format(marker=marker).encode()
    hook.write_bytes(original)
    hook.chmod(0o750)
    journal = _journal([])
    assert integ.install_git_hook(journal, paths, repo)
    assert integ.install_git_hook(journal, paths, repo)  # again: one block, same bytes
    text = hook.read_text()
    assert text.count(integ.GIT_BEGIN) == 1 and journal.created_files == []
    assert stat.S_IMODE(hook.stat().st_mode) == 0o750
    if "\r" not in template:  # (sh would choke on the CR of `-e\r`; the bytes test still holds)
        proc = _commit(repo)
        assert proc.returncode == 0, proc.stderr
        assert _wait_for(warm).startswith(f"args=--repo {repo} ")
        assert marker.read_text() == "user\n"  # the user's hook still ran, after ours
    integ.remove_git_hook(_journal([]), repo, set())
    assert hook.read_bytes() == original
    assert stat.S_IMODE(hook.stat().st_mode) == 0o750


def test_lone_shebang_without_newline_round_trips():
    block = "# >>> qmd-daemon post-commit >>>\nx\n# <<< qmd-daemon post-commit <<<\n"
    for text in ("#!/bin/sh", "#!/bin/sh\n", "", "\n", "#!/bin/sh\n\n# >>> not ours\n"):
        added = integ.with_git_block(text, block)
        assert integ.without_git_block(added) == text
        assert integ.with_git_block(integ.without_git_block(added), block) == added


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("#!/usr/bin/env python3\nprint('mine')\n", "python3 script"),
        ("#!/usr/bin/python\nprint('mine')\n", "python script"),
        ("#!/usr/bin/env -S node --harmony\nconsole.log(1)\n", "node script"),
    ],
)
def test_non_shell_hook_is_left_alone_with_one_line(paths, tmp_path, content, why):
    repo = _repo(tmp_path / "repo")
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text(content)
    hook.chmod(0o755)
    before = hook.read_bytes()
    lines: list[str] = []
    assert integ.install_git_hook(_journal(lines), paths, repo) is False
    assert hook.read_bytes() == before
    assert len(lines) == 1 and "left" in lines[0] and why in lines[0] and str(hook) in lines[0]
    integ.remove_git_hook(_journal([]), repo, set())
    assert hook.read_bytes() == before


def test_symlinked_or_disabled_hook_is_left_alone(paths, tmp_path):
    repo = _repo(tmp_path / "repo")
    hook = repo / ".git" / "hooks" / "post-commit"
    shared = tmp_path / "shared-hook"
    shared.write_text("#!/bin/sh\necho shared\n")
    hook.symlink_to(shared)
    lines: list[str] = []
    assert integ.install_git_hook(_journal(lines), paths, repo) is False
    assert shared.read_text() == "#!/bin/sh\necho shared\n" and hook.is_symlink()
    hook.unlink()
    hook.write_text("#!/bin/sh\necho off\n")
    hook.chmod(0o644)  # git skips a non-executable hook: adding ours would switch it on
    assert integ.install_git_hook(_journal(lines), paths, repo) is False
    assert hook.read_text() == "#!/bin/sh\necho off\n"
    assert len(lines) == 2 and all(line.strip().startswith("left ") for line in lines)


@pytest.mark.parametrize("hooks_path", [".githooks", "~/shared-hooks"])
def test_core_hooks_path_is_where_the_block_goes(paths, warm, tmp_path, monkeypatch, hooks_path):
    monkeypatch.setenv("HOME", str(tmp_path / "user"))  # git expands `~` with HOME
    repo = _repo(tmp_path / "repo")
    assert _git(repo, "config", "core.hooksPath", hooks_path).returncode == 0
    expected = (
        repo / ".githooks" / "post-commit"
        if hooks_path == ".githooks"
        else tmp_path / "user" / "shared-hooks" / "post-commit"
    )
    sub = repo / "src"
    sub.mkdir()
    assert integ.git_hook_path(sub) == expected  # from a subfolder too: relative to the top level
    lines: list[str] = []
    journal = _journal(lines)
    assert integ.install_git_hook(journal, paths, sub)
    assert expected.read_text() == "#!/bin/sh\n" + integ.git_hook_block(paths)
    assert not (repo / ".git" / "hooks" / "post-commit").exists()
    in_tree = [line for line in lines if "inside the work tree" in line]
    assert len(in_tree) == (1 if hooks_path == ".githooks" else 0)
    proc = _commit(repo)
    assert proc.returncode == 0, proc.stderr
    assert _wait_for(warm).startswith(f"args=--repo {repo} ")
    integ.remove_git_hook(_journal([]), sub, {str(p) for p in journal.created_files})
    assert not expected.exists()


def test_block_is_removed_even_after_core_hooks_path_changed(paths, warm, tmp_path):
    repo = _repo(tmp_path / "repo")
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text("#!/bin/sh\necho mine\n")
    hook.chmod(0o755)
    assert integ.install_git_hook(_journal([]), paths, repo)
    assert _git(repo, "config", "core.hooksPath", ".githooks").returncode == 0
    integ.remove_git_hook(_journal([]), repo, set())
    assert hook.read_text() == "#!/bin/sh\necho mine\n"


def test_the_hook_never_blocks_or_fails_a_commit(paths, warm, tmp_path):
    repo = _repo(tmp_path / "repo")
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text("#!/bin/sh -eu\necho after >> " + str(tmp_path / "after") + "\n")
    hook.chmod(0o755)
    assert integ.install_git_hook(_journal([]), paths, repo)
    # qmd-warm that sleeps until stopped and then fails: the commit neither waits nor fails
    env = dict(os.environ, QMD_TEST_WARM_SLEEP="600")
    proc = _commit(repo, env)
    assert proc.returncode == 0, proc.stderr
    _wait_for(warm)
    assert pid_running(int(Path(f"{warm}.pid").read_text())), "the commit waited for qmd-warm"
    _stop(warm)
    # qmd-warm gone altogether: still exit 0 (under `sh -eu`), the user's lines still run, and
    # the error lands in the log rather than on the terminal
    integ.wrapper_path(paths, "qmd-warm").unlink()
    proc = _commit(repo)
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == "", proc.stderr
    assert (tmp_path / "after").read_text() == "after\nafter\n"
    log = paths.state_dir / "logs" / "hooks.log"
    deadline = time.monotonic() + 60  # a ceiling: the hook logs at once
    while "qmd-warm" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "qmd-warm" in log.read_text()  # "...qmd-warm: not found"


def test_installer_flag_end_to_end_and_no_restores_the_hook(fake_home, tmp_path):
    """install.sh --git-hook REPO (Yes), then No: the user's hook under core.hooksPath comes back
    byte for byte and the repository holds exactly what it held before."""
    repo = _repo(tmp_path / "repo")
    assert _git(repo, "config", "core.hooksPath", "hooks").returncode == 0
    hook = repo / "hooks" / "post-commit"
    hook.parent.mkdir()
    hook.write_bytes(b"#!/bin/sh\n# my hook\nexit 0\n")
    hook.chmod(0o755)
    before = listing(repo, skip=(".git",))
    proc = yes_small(fake_home, "--git-hook", str(repo))
    assert proc.returncode == 0, proc.stderr
    assert f"add the post-commit refresh block to {hook}" in proc.stdout
    assert integ.GIT_BEGIN in hook.read_text()
    proc = run_install(fake_home, "--semantic-retrieval", "no")
    assert proc.returncode == 0, proc.stderr
    assert listing(repo, skip=(".git",)) == before


def test_installer_refuses_a_repo_that_is_not_one_before_any_change(fake_home, tmp_path):
    home = Path(fake_home["HOME"])
    before = listing(home)
    proc = yes_small(fake_home, "--git-hook", str(tmp_path / "not-a-repo"))
    assert proc.returncode == 2
    assert "not inside a git work tree" in proc.stderr and "nothing was changed" in proc.stderr
    assert listing(home) == before


def test_a_git_the_repository_ships_is_never_run(paths, tmp_path, monkeypatch):
    # review item F: setup ran bare "git" through PATH, so a relative entry ('.') found ./git
    repo = _repo(tmp_path / "repo")
    marker = tmp_path / "planted-git-ran"
    planted = repo / "git"
    planted.write_text(f"#!/bin/sh\ntouch '{marker}'\necho /nowhere\n")
    planted.chmod(0o755)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PATH", os.pathsep.join([".", os.environ["PATH"]]))
    assert integ.git_hook_path(repo) == repo / ".git" / "hooks" / "post-commit"
    assert not marker.exists()
