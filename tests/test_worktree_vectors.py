"""A fresh worktree (or clone) of an indexed repository has deep vectors as soon as its update
commits: its chunks identical to the repository's get their vectors at update time, so an agent's
first search there is hybrid, not keyword-only while the embed job catches up (churnwalk)."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.engine import Engine
from tests.conftest import committed_repository, git


def _six_module_repo(tmp_path: Path) -> Path:
    """A git repository (branch main) of six small Python modules, committed."""
    source = "def walrus_{0}(tusk):\n    '''Measure tusk number {0}.'''\n    return tusk * {0}\n"
    return committed_repository(tmp_path / "proj", {f"src/mod{i}.py": source.format(i) for i in range(6)})


def test_a_new_worktree_takes_the_vectors_of_its_repository_at_update(
    small_engine: Engine, tmp_path: Path
) -> None:
    repo = _six_module_repo(tmp_path)
    main = small_engine.add_collection(repo).name
    small_engine.update([main])
    small_engine.embed([main], progress=False)
    assert small_engine.pending_vectors([main]) == 0

    tree = tmp_path / "proj-task-1"
    git(repo, "worktree", "add", "-q", "-b", "task-1", str(tree))
    (tree / "src" / "new.py").write_text("def narwhal_horn():\n    return 'spiral'\n")  # not in main
    name = small_engine.add_collection(tree).name
    [report] = small_engine.update([name])
    assert report.chunks_added == 7
    # no embed run: the six twins have their vectors, only the new file's chunk waits
    assert small_engine.pending_vectors([name]) == 1


def test_an_unrelated_repository_waits_for_the_embed_job(small_engine: Engine, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for root, word in ((first, "walrus"), (second, "narwhal")):
        root.mkdir()
        (root / "m.py").write_text(f"def {word}():\n    return '{word}'\n")
    a = small_engine.add_collection(first).name
    small_engine.update([a])
    small_engine.embed([a], progress=False)
    b = small_engine.add_collection(second).name
    small_engine.update([b])
    assert small_engine.pending_vectors([b]) == 1


def test_switching_back_to_a_branch_embeds_nothing_again(small_engine: Engine, tmp_path: Path) -> None:
    """main -> a branch that deleted and rewrote files -> main: the chunks main had get their
    vectors back at update time (kept as they went, store/kept_vectors.py), none waits."""
    repo = _six_module_repo(tmp_path)
    name = small_engine.add_collection(repo).name
    small_engine.update([name])
    small_engine.embed([name], progress=False)
    git(repo, "checkout", "-q", "-b", "old")
    for i in range(3):
        (repo / "src" / f"mod{i}.py").unlink()
    (repo / "src" / "mod3.py").write_text("def walrus_3(tusk):\n    return -tusk\n")
    git(repo, "commit", "-qam", "old")
    [away] = small_engine.update([name])
    assert away.chunks_removed == 4
    assert small_engine.status()["vectors"]["kept"] == 4  # `status` says what waits to come back
    git(repo, "checkout", "-q", "main")
    [back] = small_engine.update([name])
    assert back.chunks_added == 4
    assert small_engine.pending_vectors([name]) == 0
    assert small_engine.status()["vectors"]["kept"] == 0  # taken back (the branch's mod3 had none)
