"""What the watcher watches under a root, and whether the root's filesystem lets it vouch for it.

Both watch backends list a root's folders here with the scanner's own rules (`IgnoreRules`, shared
with qmd_daemon/ingest/scan.py, as `git_rules` sets them for a repository): the built-in excludes,
the collection's ignore patterns and mask, the tree's .gitignore files and, below them, the
repository's info/exclude and the user's excludes file (files git tracks in spite of them excepted;
a submodule under its own only). Ignored folders (node_modules/, .venv/,
.git/, build/ ...) are pruned, so they cost no watch and raise no event.
A root on a network, VM or FUSE share may change without this kernel seeing it: never vouched for.
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from qmd_daemon.ingest.scan import IgnoreRules, git_rules

MAX_WATCHED_DIRS = 20_000  # where the kernel's own limit cannot be read (watchfiles backends)
_MAX_USER_WATCHES = Path("/proc/sys/fs/inotify/max_user_watches")
# filesystems whose changes need not pass through this kernel (network shares, VM shares, FUSE):
# inotify misses changes made on the other side, so the daemon never vouches for roots on them
REMOTE_FS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "9p",
        "v9fs",
        "drvfs",
        "virtiofs",
        "afs",
        "ceph",
        "glusterfs",
        "lustre",
        "gpfs",
        "ncpfs",
        "coda",
        "davfs",
        "fuse",
        "fuseblk",
    }
)


_OCTAL = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class RootSpec:
    """What a collection indexes under its root, as far as watching goes."""

    mask: str
    ignore: tuple[str, ...] = ()


class Subtree:
    """`rules`, asked about paths relative to folder `base` instead of the root (for watch_dirs)."""

    def __init__(self, rules: IgnoreRules, base: str):
        self.rules, self.base = rules, base

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        return self.rules.ignored(f"{self.base}/{rel}", is_dir)


def watch_dirs(
    root: Path, rules: IgnoreRules | Subtree, limit: int = MAX_WATCHED_DIRS
) -> tuple[list[str], bool]:
    """The folders under `root` a scan could take files from ('' is the root), breadth first, at
    most `limit`; and whether that is all of them (every one listed and readable)."""
    out: list[str] = []
    queue = deque([""])
    complete = True
    while queue:
        if len(out) >= limit:
            return out, False
        rel = queue.popleft()
        out.append(rel)
        try:
            entries = sorted(os.scandir(root / rel if rel else root), key=lambda e: e.name)
        except FileNotFoundError:
            continue
        except OSError:
            complete = False  # unreadable: what appears in it would go unseen
            continue
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            child = f"{rel}/{entry.name}" if rel else entry.name
            if not rules.ignored(child, True):
                queue.append(child)
    return out, complete


def inotify_watch_budget(limits: Path = _MAX_USER_WATCHES) -> int:
    """How many folders the daemon may watch: the kernel's per-user inotify limit less headroom
    for the user's other watchers (editors, IDEs, file managers share the limit): a quarter of it,
    and at least half of a small limit. MAX_WATCHED_DIRS where the limit cannot be read."""
    try:
        limit = int(limits.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return MAX_WATCHED_DIRS
    return max(0, limit - max(limit // 4, min(8192, limit // 2)))


def filesystem_type(path: Path) -> str | None:
    """The type of the filesystem holding `path`, from /proc/self/mountinfo (None elsewhere)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    target = str(path)
    best, best_type = -1, None
    for line in lines:
        head, sep, tail = line.partition(" - ")
        fields = head.split()
        if not sep or len(fields) < 5 or not tail:
            continue
        mount = _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), fields[4])  # \040 for a space
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > best:
            best, best_type = len(mount), tail.split()[0]
    return best_type


def is_local(path: Path) -> bool:
    """Whether every change under `path` passes through this kernel (not a remote or FUSE share)."""
    kind = filesystem_type(path)
    return kind is None or not (kind in REMOTE_FS or kind.startswith("fuse."))


@dataclass
class WatchedRoot:
    """A root being watched: its rules, the folders watched under it, and since when in full."""

    path: Path
    spec: RootSpec
    rules: IgnoreRules
    local: bool
    complete: bool
    dirs: dict[str, int] = field(default_factory=dict)  # folder (relative) -> watch descriptor
    since: float | None = None  # monotonic: the watch is whole from then on

    def rel(self, path: Path) -> str | None:
        if path == self.path:
            return ""
        try:
            return path.relative_to(self.path).as_posix()
        except ValueError:
            return None


def prepare_root(
    path: Path, spec: RootSpec, excludes: tuple[str, ...], limit: int
) -> tuple[WatchedRoot, list[str]]:
    """The root's rules and the folders to watch under it (at most `limit`); blocking: a thread."""
    rules = git_rules(path, mask=spec.mask, ignore=list(spec.ignore), excludes=excludes)
    rels, complete = watch_dirs(path, rules, limit)
    return WatchedRoot(path, spec, rules, local=is_local(path), complete=complete), rels


def watched_folders(roots: dict[Path, WatchedRoot]) -> tuple[Path, ...]:
    """Every folder watched under `roots`, sorted, each once."""
    return tuple(sorted({r.path / d if d else r.path for r in roots.values() for d in r.dirs}))
