"""Linked git worktrees (`git worktree add`) as collections, and when one may be forgotten.

Coding agents make a worktree per task and remove it when the task is merged; each one searched
became a collection, and a removed one stayed in the index for good (its rows, its `folder is
gone` line in every `update` and `status`). A folder that is merely out of reach (a drive
unmounted, a share down) must keep its index, so the rule asks git, not the file system alone: a
collection is forgotten only when its folder is gone, it was registered as a linked worktree of a
repository whose git folder is still there, and that git folder no longer lists it (`git worktree
remove`, or `git worktree prune` after an `rm -rf`). Git itself keeps a worktree it cannot reach
listed (prunable) until it is pruned, so an unmounted worktree is never forgotten.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path


def worktree_common_dir(top: Path) -> Path | None:
    """The common git folder of the repository whose linked worktree `top` is; None for a main
    checkout, a submodule (its git folder is under `modules/`, not `worktrees/`) or no repository."""
    dot_git = top / ".git"
    try:  # a folder this user cannot list raises PermissionError from is_file (test_unreadable)
        if not dot_git.is_file():
            return None
        pointer = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        if not pointer.startswith("gitdir:"):
            return None
        admin = Path(os.path.realpath(top / pointer[len("gitdir:"):].strip()))
        common = Path(os.path.realpath(admin / (admin / "commondir").read_text(encoding="utf-8").strip()))
    except OSError:
        return None
    return common if admin.parent == common / "worktrees" else None


def _listed_folder(entry: Path) -> Path:
    """The worktree folder a `<common>/worktrees/<id>` entry names (its `gitdir` file holds the
    worktree's `.git`, absolute, or relative to the entry with worktree.useRelativePaths)."""
    gitdir = (entry / "gitdir").read_text(encoding="utf-8", errors="replace").strip()
    return Path(os.path.realpath(entry / gitdir)).parent


def _spelling(path: Path) -> str:
    """A folder's path up to case and Unicode normal form: on macOS and Windows one folder has
    several spellings (a case typed otherwise than git's; git's NFC with core.precomposeUnicode
    against HFS+'s NFD), and an entry matched that is another folder only keeps an index."""
    return unicodedata.normalize("NFC", str(path)).casefold()


def removed_worktree(folder: Path, common: Path) -> bool:
    """Whether the worktree once at `folder` (resolved) was removed through git: the folder is
    gone, the repository's git folder `common` is there, and none of its worktree entries names
    the folder. Anything that cannot be read counts as still listed (the index is kept)."""
    try:
        if os.path.lexists(folder) or not (common / "HEAD").is_file():
            return False
        entries = list((common / "worktrees").iterdir())
    except FileNotFoundError:  # git deletes the folder with the repository's last worktree
        return True
    except OSError:
        return False
    for entry in entries:
        try:
            if _spelling(_listed_folder(entry)) == _spelling(folder):
                return False
        except OSError:  # an entry git is writing, or one this user cannot read: keep
            return False
    return True
