"""A collection of a linked git worktree is forgotten once git removed the worktree (agents make
and remove one per task: each stayed in the index for good), and only then: a folder merely out of
reach, or deleted without git, keeps its index (ingest/worktrees.py)."""

from __future__ import annotations

import shutil
import unicodedata
from pathlib import Path
from typing import Any

import yaml

from qmd_daemon.engine import Engine
from qmd_daemon.ingest.worktrees import removed_worktree, worktree_common_dir
from tests.conftest import committed_repository, git


def _repository(tmp_path: Path) -> Path:
    walrus = "def walrus_tusk_length():\n    return 3\n"
    return committed_repository(tmp_path / "proj", {"src/walrus.py": walrus})


def _worktree(repo: Path, folder: Path, branch: str) -> Path:
    git(repo, "worktree", "add", "-q", "-b", branch, str(folder))
    return folder.resolve()


def test_a_linked_worktree_is_told_from_a_main_checkout_and_a_plain_folder(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    tree = _worktree(repo, tmp_path / "proj-task-1", "task-1")
    inner = _worktree(repo, repo / ".claude" / "worktrees" / "t2", "task-2")
    assert worktree_common_dir(tree) == repo / ".git"
    assert worktree_common_dir(inner) == repo / ".git"
    assert worktree_common_dir(repo) is None
    assert worktree_common_dir(repo / "src") is None


def test_git_worktree_remove_forgets_its_collection_and_leaves_the_rest(
    engine: Engine, tmp_path: Path
) -> None:
    repo = _repository(tmp_path)
    tree = _worktree(repo, tmp_path / "proj-task-1", "task-1")
    inner = _worktree(repo, repo / ".claude" / "worktrees" / "t2", "task-2")
    for folder in (repo, tree, inner):
        engine.add_collection(folder)
    engine.update()
    names = {c.path: c.name for c in engine.collections().values()}
    assert engine.collections()[names[tree]].worktree_of == repo / ".git"
    assert engine.collections()[names[repo]].worktree_of is None

    git(repo, "worktree", "remove", str(tree))
    reports = engine.update()
    forgotten = [r for r in reports if r.forgotten]
    assert [r.collection for r in forgotten] == [names[tree]]
    assert f"git worktree of {repo}" in str(forgotten[0].forgotten)
    assert names[tree] not in engine.collections()
    assert engine.store.collection_id(names[tree]) is None  # its rows went too
    assert not [r for r in reports if r.error]
    # the repository and the other worktree are kept and searched as before
    assert {names[repo], names[inner]} <= set(engine.collections())
    hits = engine.search("walrus_tusk_length", collections=[names[repo], names[inner]])
    assert {h.collection for h in hits} == {names[repo], names[inner]}


def test_a_worktree_deleted_without_git_is_kept_until_git_prunes_it(engine: Engine, tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    tree = _worktree(repo, repo / ".claude" / "worktrees" / "t1", "task-1")
    name = engine.add_collection(tree).name
    engine.update()

    shutil.rmtree(tree)  # git still lists it (prunable): as it would a worktree on a drive unmounted
    reports = engine.update(keep_going=True)
    assert name in engine.collections()
    error = [r.error for r in reports if r.collection == name][0]
    assert f"`git -C {repo} worktree prune`" in str(error)  # what to run when it was deleted for good
    assert engine.store.collection_id(name) is not None

    git(repo, "worktree", "prune")
    reports = engine.update(keep_going=True)
    assert [r.collection for r in reports if r.forgotten] == [name]
    assert name not in engine.collections()


def test_a_worktree_out_of_reach_keeps_its_index(tmp_path: Path) -> None:
    """Moved away (a drive unmounted) while git lists it, or its repository out of reach itself:
    never forgotten."""
    repo = _repository(tmp_path)
    tree = _worktree(repo, tmp_path / "proj-task-1", "task-1")
    aside = tmp_path / "unmounted"
    tree.rename(aside)
    assert not removed_worktree(tree, repo / ".git")
    aside.rename(tree)
    git(repo, "worktree", "remove", str(tree))
    assert removed_worktree(tree, repo / ".git")
    repo.rename(tmp_path / "repo-unmounted")
    assert not removed_worktree(tree, repo / ".git")


def test_a_worktree_git_lists_under_another_spelling_is_kept(tmp_path: Path) -> None:
    """On macOS and Windows one folder has several spellings: a case typed otherwise than git's
    (`git worktree add ../WT`, then `collection add ../wt`), or git's NFC (core.precomposeUnicode)
    against the file system's NFD. Here git's entry is rewritten to such a spelling (this file system
    tells them apart): with the folder out of reach, the collection was forgotten while git still
    listed it, which an unmounted drive must never cause."""
    repo = _repository(tmp_path)
    tree = _worktree(repo, tmp_path / "Proj-Tâche-1", "task-1")
    (entry,) = (repo / ".git" / "worktrees").iterdir()
    spelled = str(tree).replace("Proj-Tâche-1", unicodedata.normalize("NFD", "PROJ-TÂCHE-1"))
    (entry / "gitdir").write_text(f"{spelled}/.git\n")
    tree.rename(tmp_path / "unmounted")
    assert not removed_worktree(tree, repo / ".git")
    (entry / "gitdir").write_text(f"{tmp_path / 'elsewhere'}/.git\n")  # another folder: git removed ours
    assert removed_worktree(tree, repo / ".git")

def test_a_worktree_registered_before_worktree_of_was_kept_gets_it(engine: Engine, tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    tree = _worktree(repo, tmp_path / "proj-task-1", "task-1")
    name = engine.add_collection(tree).name
    config_file = engine.settings.config_file
    raw = yaml.safe_load(config_file.read_text())
    del raw["collections"][name]["worktreeOf"]  # as an earlier version wrote it
    config_file.write_text(yaml.safe_dump(raw))
    assert engine.collections()[name].worktree_of is None
    engine.update()
    assert engine.collections()[name].worktree_of == repo / ".git"
    git(repo, "worktree", "remove", str(tree))
    assert [r.collection for r in engine.update() if r.forgotten] == [name]


def test_a_default_collection_of_the_same_repository_is_not_searched_beside_its_worktree(
    engine: Engine, tmp_path: Path
) -> None:
    """`includeByDefault` on the main checkout doubled every hit in a worktree of it: the same
    file, once in the worktree and once in a checkout the agent was not working in."""
    repo = _repository(tmp_path)
    tree = _worktree(repo, tmp_path / "proj-task-1", "task-1")
    sibling = _worktree(repo, repo / ".claude" / "worktrees" / "t2", "task-2")
    other = tmp_path / "notes"
    other.mkdir()
    (other / "walrus.md").write_text("# Walrus tusk length\n\nwalrus_tusk_length measures a tusk.\n")
    main = engine.add_collection(repo, include_by_default=True).name
    second = engine.add_collection(sibling, include_by_default=True).name
    notes = engine.add_collection(other, include_by_default=True).name
    home = engine.add_collection(tree)
    engine.update()
    assert engine.search_scope(None, home) == [home.name, notes]
    hits = engine.search("walrus_tusk_length", collections=engine.search_scope(None, home))
    assert {h.collection for h in hits} == {home.name, notes}
    # from the main checkout, its worktrees are the ones left out; other repositories stay
    assert engine.search_scope(None, engine.collections()[main]) == [main, notes]
    assert second not in engine.search_scope(None, engine.collections()[main])


def test_a_name_given_to_another_folder_while_an_update_checks_it_is_not_forgotten(
    engine: Engine, tmp_path: Path, monkeypatch: Any
) -> None:
    """review18: the update read the collections, found the worktree removed, then removed the
    collection by name; a `collection add` in between (another terminal) that handed the name to a
    new folder lost that folder's registration and index. The hand-over is made from inside the
    check (the only way to hit the window without timing), by a second engine as another process."""
    import qmd_daemon.engine as engine_module

    repo = _repository(tmp_path)
    tree = _worktree(repo, tmp_path / "proj-task-1", "task-1")
    name = engine.add_collection(tree).name
    engine.update()
    git(repo, "worktree", "remove", str(tree))
    newcomer = tmp_path / "other" / "proj-task-1"
    newcomer.mkdir(parents=True)
    (newcomer / "kept.py").write_text("def kept_after_handover():\n    return 1\n")
    real = engine_module.removed_worktree

    def removed_then_handed_over(folder: Path, common: Path) -> bool:
        gone = real(folder, common)
        other = Engine(engine.settings)
        try:
            assert other.add_collection(newcomer, name=name).name == name  # the gone one's name
        finally:
            other.close()
        return gone

    monkeypatch.setattr(engine_module, "removed_worktree", removed_then_handed_over)
    reports = engine.update()
    assert not [r for r in reports if getattr(r, "forgotten", None)]
    assert engine.collections()[name].path == newcomer.resolve()
    assert engine.search("kept_after_handover", [name])
