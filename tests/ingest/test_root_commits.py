"""A separate clone of a repository included by default is not searched beside it: the same
repository is told by its root commits, recorded in index.yml at an update (one git call, once),
compared with no git call per search. A fork is the same repository; a monorepo that merged
another repository's history is not (engine.search_scope)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from qmd_daemon.engine import Engine
from qmd_daemon.ingest.root_commits import head_state
from tests.conftest import committed_repository, git, write_tree

WALRUS = "def walrus_tusk_length():\n    return 3\n"


def _clone(source: Path, folder: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(source), str(folder)], check=True, capture_output=True)
    return folder.resolve()


def _commit(repo: Path, files: dict[str, str | bytes]) -> None:
    write_tree(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "more")


def _roots(repo: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "rev-list", "--max-parents=0", "HEAD"],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    return sorted(out.split())


def test_a_separate_clone_of_a_default_repository_is_not_searched_beside_it(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """~/src/lib registered with --default and the agent in ~/work/lib: every hit came twice, half
    of them in the checkout the agent was not working in (it may edit the wrong copy)."""
    src = committed_repository(tmp_path / "src" / "lib", {"walrus.py": WALRUS})
    work = _clone(src, tmp_path / "work" / "lib")
    _commit(work, {"tusk.py": "TUSK = 'walrus_tusk_length'\n"})  # a fork moves on: still the same one
    notes = write_tree(tmp_path / "notes", {"walrus.md": "# Walrus\n\nwalrus_tusk_length measures a tusk.\n"})
    seal = "def walrus_tusk_length_of_seal():\n    pass\n"
    other = committed_repository(tmp_path / "other", {"seal.py": seal})  # another repository
    library = engine.add_collection(src, include_by_default=True).name
    note_name = engine.add_collection(notes, include_by_default=True).name
    other_name = engine.add_collection(other, include_by_default=True).name
    home = engine.add_collection(work)
    engine.update()

    raw = yaml.safe_load(engine.settings.config_file.read_text())["collections"]
    assert raw[home.name]["rootCommits"] == raw[library]["rootCommits"] == _roots(src)
    assert "rootCommits" not in raw[note_name]  # not a repository
    monkeypatch.setenv("PATH", "")  # no git from here on: the scope asks none
    home = engine.collections()[home.name]
    assert engine.search_scope(None, home) == [home.name, note_name, other_name]
    hits = engine.search("walrus_tusk_length", collections=engine.search_scope(None, home))
    assert {h.collection for h in hits} == {home.name, note_name, other_name}
    assert engine.search_scope(None, engine.collections()[library]) == [library, note_name, other_name]


def test_a_monorepo_holding_another_repository_s_history_is_searched_beside_it(
    engine: Engine, tmp_path: Path
) -> None:
    """A monorepo that merged a library's history (a subtree with its commits) has the library's
    root and its own: neither is the other, so each is searched beside the other."""
    lib = committed_repository(tmp_path / "lib", {"walrus.py": WALRUS})
    mono = committed_repository(tmp_path / "mono", {"app.py": "import walrus\n"})
    git(mono, "pull", "-q", "--no-rebase", "--no-edit", "--allow-unrelated-histories", str(lib), "main")
    assert len(_roots(mono)) == 2 and set(_roots(lib)) < set(_roots(mono))
    lib_name = engine.add_collection(lib, include_by_default=True).name
    mono_name = engine.add_collection(mono, include_by_default=True).name
    engine.update()
    assert engine.search_scope(None, engine.collections()[mono_name]) == [mono_name, lib_name]
    assert engine.search_scope(None, engine.collections()[lib_name]) == [lib_name, mono_name]


def test_roots_are_recorded_once_and_go_with_the_folder(engine: Engine, tmp_path: Path) -> None:
    """Recorded at the first update that finds them (an entry from an earlier version gets them
    then), read again after a `collection add` of the same folder (another repository there, a
    rewritten history: no other way to refresh them), dropped when the name goes to another."""
    repo = committed_repository(tmp_path / "proj", {"walrus.py": WALRUS})
    name = engine.add_collection(repo).name
    assert engine.collections()[name].root_commits == ()
    engine.update()
    assert list(engine.collections()[name].root_commits) == _roots(repo)
    engine.add_collection(repo, name=name, include_by_default=True)  # another setting, same folder
    assert engine.collections()[name].root_commits == ()
    engine.update()
    assert list(engine.collections()[name].root_commits) == _roots(repo)

    config_file = engine.settings.config_file
    raw = yaml.safe_load(config_file.read_text())
    raw["collections"][name]["rootCommits"] = ["recorded-before"]
    config_file.write_text(yaml.safe_dump(raw))
    engine.update()
    assert engine.collections()[name].root_commits == ("recorded-before",), "no git call at later updates"
    moved = committed_repository(tmp_path / "elsewhere", {"other.py": "x = 1\n"})
    repo.rename(tmp_path / "gone")  # its folder gone: the name may go to another folder
    engine.add_collection(moved, name=name)
    assert engine.collections()[name].root_commits == ()


READ_ONLY_CONFIG = """
import os
import subprocess
import sys
from pathlib import Path
from qmd_daemon.engine import Engine
repo, config_dir = Path(sys.argv[1]), Path(os.environ["QMD_CONFIG_DIR"])
repo.mkdir()
(repo / "walrus.py").write_text("def walrus_tusk_length():\\n    return 3\\n")
git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-C", str(repo)]
for step in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "first"]):
    subprocess.run(git + step, check=True, capture_output=True)
engine = Engine()
name = engine.add_collection(repo).name
config_dir.chmod(0o555)  # index.yml's folder on a read-only mount, say: updates wrote nothing there
try:
    print([r.error for r in engine.update()])
    print(engine.search("walrus_tusk_length", [name])[0].path)
finally:
    config_dir.chmod(0o755)
"""


def test_an_index_yml_this_user_cannot_write_leaves_updates_working(shared_tmp: Path) -> None:
    """Recording the roots edits index.yml; a folder this user cannot write (EACCES on its lock
    file) failed every update and the daemon's refreshes, where an update never needed to write
    it. The roots are left unrecorded then (a clone is searched beside, as before)."""
    from tests.conftest import python_as_another_user

    home = shared_tmp / "home"
    env = {"QMD_CONFIG_DIR": str(home / "config"), "QMD_PRELOAD": "0"}
    done = python_as_another_user(home, "-c", READ_ONLY_CONFIG, str(home / "repo"), env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["[None]", "walrus.py"]


def test_the_walk_is_vouched_for_with_the_recorded_roots(engine: Engine, tmp_path: Path) -> None:
    """The daemon's watcher vouches for a collection when its config is the one its last refresh
    walked with (daemon/vouch.py compares the whole entry). Asked with the entry as it was before
    its roots were recorded, the next refresh saw another config and walked every collection
    again, once after the upgrade and once after each `collection add`."""
    repo = committed_repository(tmp_path / "proj", {"walrus.py": WALRUS})
    name = engine.add_collection(repo).name
    asked: list[tuple[str, ...]] = []
    engine.update(unchanged=lambda collection, _stamp: asked.append(collection.root_commits) is not None)
    assert asked == [tuple(_roots(repo))] == [engine.collections()[name].root_commits]


def _logging_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real `git` first on PATH that writes each call's arguments to a log, then runs git."""
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "logging-bin"
    folder.mkdir()
    log = tmp_path / "git-calls.log"
    wrapper = folder / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return log


def _rev_lists(log: Path) -> int:
    return sum("rev-list" in line for line in log.read_text().splitlines()) if log.exists() else 0


def test_a_repository_without_a_commit_is_asked_for_its_roots_once_until_head_moves(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git init` and files, no commit yet (an agent's scratch project): git had no roots to tell,
    nothing was recorded, and every update ran `git rev-list --max-parents=0 HEAD` again (8 ms).
    "No roots" is kept with HEAD as its files say; the first commit moves HEAD and git is asked."""
    log = _logging_git(tmp_path, monkeypatch)
    repo = write_tree(tmp_path / "scratch", {"walrus.py": WALRUS})
    git(repo, "init", "-q", "-b", "main")
    name = engine.add_collection(repo.resolve()).name
    engine.update()
    assert _rev_lists(log) == 1
    entry = yaml.safe_load(engine.settings.config_file.read_text())["collections"][name]
    assert "rootCommits" not in entry and entry["noRootCommitsAt"] == "ref: refs/heads/main none"

    log.unlink()
    engine.update()
    engine.update()
    assert _rev_lists(log) == 0, log.read_text()

    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    engine.update()
    engine.update()
    assert _rev_lists(log) == 1  # asked once at the new HEAD; found roots are read once, as before
    entry = yaml.safe_load(engine.settings.config_file.read_text())["collections"][name]
    assert entry["rootCommits"] == _roots(repo) and "noRootCommitsAt" not in entry


@pytest.mark.parametrize("layout", ["packed", "worktree", "detached"])
def test_head_state_reads_the_commit_head_names(tmp_path: Path, layout: str) -> None:
    """HEAD read from files as git would resolve it: a branch in packed-refs (after `git gc` or
    `git pack-refs`), a linked worktree's own HEAD with the repository's refs, a detached HEAD."""
    repo = committed_repository(tmp_path / "repo", {"a.py": "A = 1\n"})
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    top = repo
    if layout == "packed":
        git(repo, "pack-refs", "--all")
        assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    elif layout == "worktree":
        top = (tmp_path / "task").resolve()
        git(repo, "worktree", "add", "-q", "-b", "task", str(top))
    else:
        git(repo, "checkout", "-q", "--detach")
    state = head_state(top)
    assert state is not None and state.endswith(commit), state
    assert head_state(top / "sub") is None  # no repository's top level


@pytest.mark.skipif(getattr(os, "geteuid", lambda: -1)() != 0, reason="needs root to give the folder away")
def test_a_repository_git_refuses_is_asked_again_only_after_its_next_commit(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user's repository (safe.directory refuses it: `detected dubious ownership`) has
    commits, but git tells none of them: kept with its HEAD's commit, asked again when it moves."""
    repo = committed_repository(tmp_path / "theirs", {"walrus.py": WALRUS})
    subprocess.run(["chown", "-R", "nobody", str(repo)], check=True)
    log = _logging_git(tmp_path, monkeypatch)
    name = engine.add_collection(repo).name
    engine.update()
    engine.update()
    assert _rev_lists(log) == 1
    entry = yaml.safe_load(engine.settings.config_file.read_text())["collections"][name]
    assert entry["noRootCommitsAt"].startswith("ref: refs/heads/main ") and "rootCommits" not in entry
    subprocess.run(["chown", "-R", "root", str(repo)], check=True)
    _commit(repo, {"tusk.py": "TUSK = 1\n"})
    engine.update()
    assert _rev_lists(log) == 2
    entry = yaml.safe_load(engine.settings.config_file.read_text())["collections"][name]
    assert entry["rootCommits"] and "noRootCommitsAt" not in entry


def test_roots_are_read_at_the_next_update_when_git_was_not_on_path(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon started with a bare PATH (a service unit) runs no git: that was kept as "no roots
    at this HEAD", so once git was found the roots were never read until the next commit, and a
    separate clone was searched beside the repository."""
    repo = committed_repository(tmp_path / "repo", {"walrus.py": WALRUS})
    name = engine.add_collection(repo.resolve()).name
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    with monkeypatch.context() as without_git:
        without_git.setenv("PATH", str(bare))
        engine.update()
    entry = yaml.safe_load(engine.settings.config_file.read_text())["collections"][name]
    assert "noRootCommitsAt" not in entry and "rootCommits" not in entry
    engine.update()
    entry = yaml.safe_load(engine.settings.config_file.read_text())["collections"][name]
    assert entry["rootCommits"] == _roots(repo)
