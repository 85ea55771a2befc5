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

A repository with no commit yet (`git init`, then files: an agent's scratch project) or one git
refuses to read (another user's, refused by safe.directory) has no roots to tell; git was asked
again at every update (8 ms each). `head_state` reads what HEAD points at from the files under
`.git` (no git call); the answer "no roots" is kept with it (`noRootCommitsAt`) and git is asked
again only once HEAD has moved (the first commit, a branch switched).
"""

from __future__ import annotations

from pathlib import Path

from clients._qmd_client import git_executable
from qmd_daemon.ingest.scan import find_git_root, run_git

_MAX_READ = 4096  # HEAD, a ref, a `.git` file: a line each


def root_commits(top: Path) -> tuple[str, ...] | None:
    """The root commits of the repository checked out at `top` (its top level), sorted; () when
    git tells none (no commit yet, a folder safe.directory refuses); None when nothing can be
    known now (not a top level, no git on PATH: a daemon started with a bare PATH), so that is
    not kept as an answer and git is asked again at the next update."""
    try:
        if find_git_root(top) != top:
            return None
    except OSError:  # a folder this user cannot enter (EACCES): nothing known, asked again later
        return None
    if git_executable() is None:
        return None
    proc = run_git(top, "rev-list", "--max-parents=0", "HEAD")
    roots = proc.stdout.decode("ascii", "replace").split() if proc is not None else []
    return tuple(sorted(roots))


def head_state(top: Path) -> str | None:
    """What HEAD of the repository checked out at `top` points at, read from its files: HEAD's
    line, then the commit of the branch it names (a loose ref, else its `packed-refs` line, else
    "none": no commit yet) or, in a reftable repository, the table list's change time. None when
    `top` is no repository's top level or its git folder cannot be read."""
    try:
        if find_git_root(top) != top:
            return None
        git_dir = _git_dir(top / ".git")
        head = _read_line(git_dir / "HEAD")
        if not head.startswith("ref:"):
            return head  # detached: the commit itself
        ref = head[4:].strip()
        common = git_dir
        if (git_dir / "commondir").is_file():  # a linked worktree: its refs are the repository's
            common = (git_dir / _read_line(git_dir / "commondir")).resolve()
        tables = common / "reftable" / "tables.list"
        if tables.is_file():
            return f"{head} {tables.stat().st_mtime_ns}"
        loose = common / ref
        if loose.is_file():
            return f"{head} {_read_line(loose)}"
        packed = common / "packed-refs"
        if packed.is_file():
            with packed.open("rb") as handle:
                for raw in handle:
                    line = raw.decode("utf-8", "replace").strip()
                    if line.endswith(" " + ref):
                        return f"{head} {line.split()[0]}"
        return f"{head} none"
    except (OSError, ValueError):  # unreadable, or a `.git` file without `gitdir:`
        return None


def _git_dir(dot_git: Path) -> Path:
    """The git folder of a checkout: `.git` itself, or the folder its `gitdir:` line names (a
    linked worktree, a submodule)."""
    if dot_git.is_dir():
        return dot_git
    line = _read_line(dot_git)
    if not line.startswith("gitdir:"):
        raise ValueError(f"{dot_git}: no gitdir line")
    return (dot_git.parent / line[7:].strip()).resolve()


def _read_line(path: Path) -> str:
    with path.open("rb") as handle:
        return handle.read(_MAX_READ).decode("utf-8", "replace").strip().split("\n", 1)[0].strip()
