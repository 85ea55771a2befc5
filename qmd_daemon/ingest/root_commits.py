"""Which repository a checkout is, told without git at search time: its root commits.

A separate `git clone` of a repository shares no git folder with it (worktrees do), but it shares
its history, and so the commits that history starts from. They are read from git once, at the
collection's first update that finds them (`git rev-list --max-parents=0 HEAD`, which walks the
whole history: 0.2 s on a 200k-commit history made with `git fast-import` with a commit-graph,
1.3 s without; too slow for every update of a large repository), and kept in index.yml
(`rootCommits`), so a search compares two lists (engine.search_scope).

Two checkouts are the same repository when their root commits are the same set: a fork is (its
history starts where upstream's does); a monorepo that merged a library's history (a subtree with
its commits) is not the library, nor the library the monorepo (it has a root of its own too), so
each is still searched beside the other; a squashed subtree shares no root at all. A shallow clone
starts from its cut-off commit, and a repository that merged an unrelated history after a clone
recorded its roots has one root more: such pairs are searched side by side, as before.
"""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.ingest.scan import find_git_root, run_git


def root_commits(top: Path) -> tuple[str, ...] | None:
    """The root commits of the repository checked out at `top` (its top level), sorted; None
    when `top` is not a repository's top level or git cannot tell (no commit yet, no git)."""
    try:
        if find_git_root(top) != top:
            return None
    except OSError:  # a folder this user cannot enter (EACCES): nothing known, asked again later
        return None
    proc = run_git(top, "rev-list", "--max-parents=0", "HEAD")
    roots = proc.stdout.decode("ascii", "replace").split() if proc is not None else []
    return tuple(sorted(roots)) or None
