"""The Linux watch backend: inotify (through `inotify_simple`), its descriptor read by the event loop.

Events arrive as the kernel queues them, inside the system call that made the change, and an idle
daemon is never woken. So `read()` takes in every change made before it was called, and the daemon
can vouch for a root watched here (`vouches`): every folder a scan could index is watched, on a
local filesystem. Folders created or moved in are watched as their event arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

from qmd_daemon.daemon.watch_scope import RootSpec, Subtree, WatchedRoot, prepare_root, watch_dirs
from qmd_daemon.errors import QmdError

try:  # a Linux-only dependency; watchfiles elsewhere
    from inotify_simple import INotify, flags
except ImportError:  # pragma: no cover
    INotify = flags = None  # type: ignore[assignment,misc]

log = logging.getLogger("qmd_daemon.watcher")

INOTIFY = INotify is not None and sys.platform.startswith("linux")
# content and names; not ATTRIB (a touch or chmod changes nothing a scan indexes)
WATCH_MASK = (
    flags.MODIFY
    | flags.CLOSE_WRITE
    | flags.MOVED_FROM
    | flags.MOVED_TO
    | flags.CREATE
    | flags.DELETE
    | flags.DELETE_SELF
    | flags.MOVE_SELF
    | flags.ONLYDIR
    | flags.DONT_FOLLOW
    | flags.EXCL_UNLINK
    if INOTIFY
    else 0
)


async def open_inotify() -> INotify:
    """A non-blocking inotify instance (OSError where there is none)."""
    if INotify is None:
        raise OSError(errno.ENOSYS, "inotify_simple is not installed")
    # in a thread: inotify_simple finds libc with ctypes.util.find_library (`ldconfig -p`)
    return await asyncio.to_thread(INotify, nonblocking=True)


# names whose change may add or remove a repository of its own under a root (a submodule added,
# checked out or taken away: `git submodule add` writes .gitmodules, a checkout a `.git` file):
# the root's rules (`IgnoreRules.repos`, the gitlinks kept) are made again once its changes settle
REPO_NAMES = frozenset({".gitmodules", ".git"})


class InotifyBackend:
    """A kernel watch on each folder of a set of roots. Each read hands `on_change` the roots its
    events touched, `on_relist` (at once, mid-read) a root whose folders must be listed again:
    a .gitignore changed, the queue overflowed, the root itself went or moved; and `on_repos` a
    root where a submodule may have come or gone (REPO_NAMES): listed again once git is done."""

    def __init__(
        self,
        ino: INotify,
        loop: asyncio.AbstractEventLoop,
        excludes: tuple[str, ...],
        max_dirs: int,
        *,
        on_change: Callable[[set[Path]], None],
        on_relist: Callable[[Path], None],
        on_repos: Callable[[Path], None],
    ):
        self.roots: dict[Path, WatchedRoot] = {}
        self.error: str | None = None
        self.excludes = excludes
        self.max_dirs = max_dirs
        self._on_change = on_change
        self._on_relist = on_relist
        self._on_repos = on_repos
        self._owners: dict[int, dict[Path, str]] = {}  # wd -> {root: folder}
        self._ino: INotify | None = ino
        self._loop = loop
        loop.add_reader(ino.fileno(), self.read)

    def vouches(self, root: Path) -> bool:
        entry = self.roots.get(root)
        return (
            self._ino is not None
            and self.error is None
            and entry is not None
            and entry.since is not None
            and entry.complete
            and entry.local
        )

    def _budget(self) -> int:
        return max(0, self.max_dirs - sum(len(r.dirs) for r in self.roots.values()))

    async def add_root(self, path: Path, spec: RootSpec) -> None:
        try:
            entry, rels = await asyncio.to_thread(prepare_root, path, spec, self.excludes, self._budget())
        except (OSError, QmdError) as exc:
            log.warning("not watching %s: %s", path, exc)
            return
        if self._ino is None:  # closed meanwhile
            return
        self.roots[path] = entry
        for rel in rels:
            self._watch(entry, rel)
        if "" not in entry.dirs:  # the root itself could not be watched (gone, unreadable)
            entry.complete = False
        entry.since = time.monotonic()
        if not entry.complete:
            log.warning("%s is watched in part only (%d folders)", path, len(entry.dirs))

    def drop(self, path: Path) -> None:
        entry = self.roots.pop(path, None)
        if entry is not None:
            for rel in list(entry.dirs):
                self._unwatch(entry, rel)

    def _watch(self, entry: WatchedRoot, rel: str) -> None:
        assert self._ino is not None
        try:
            wd = self._ino.add_watch(entry.path / rel if rel else entry.path, WATCH_MASK)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return  # gone already; its parent's event says so
            entry.complete = False
            if exc.errno == errno.ENOSPC:
                self.error = "the inotify watch limit is reached (sysctl fs.inotify.max_user_watches)"
                log.warning("%s", self.error)
            return
        entry.dirs[rel] = wd
        self._owners.setdefault(wd, {})[entry.path] = rel

    def _unwatch(self, entry: WatchedRoot, rel: str) -> None:
        wd = entry.dirs.pop(rel, None)
        if wd is None:
            return
        owners = self._owners.get(wd)
        if owners is not None and owners.get(entry.path) == rel:
            del owners[entry.path]
            if not owners:
                del self._owners[wd]
                if self._ino is not None:
                    with contextlib.suppress(OSError):  # a watch the kernel dropped already
                        self._ino.rm_watch(wd)

    def _watch_tree(self, entry: WatchedRoot, rel: str) -> None:
        """A folder appeared (created, moved in): watch it and the folders in it."""
        rels, complete = watch_dirs(entry.path / rel, Subtree(entry.rules, rel), self._budget())
        entry.complete = entry.complete and complete
        for sub in rels:
            self._watch(entry, f"{rel}/{sub}" if sub else rel)

    def _unwatch_tree(self, entry: WatchedRoot, rel: str) -> None:
        for sub in [d for d in entry.dirs if d == rel or d.startswith(rel + "/")]:
            self._unwatch(entry, sub)

    def read(self) -> None:
        """Take in every event queued now (the loop calls this when the descriptor is readable)."""
        if self._ino is None:
            return
        try:
            events = self._ino.read(timeout=0)  # every event queued now; [] when none
        except OSError as exc:
            self.error = f"inotify read: {exc}"
            log.warning("file watching stopped: %s", self.error)
            return
        touched: set[Path] = set()
        for wd, mask, _cookie, name in events:
            if mask & flags.Q_OVERFLOW:
                log.warning("inotify queue overflow: refreshing and re-listing every root")
                touched.update(self.roots)
                for path in list(self.roots):
                    self._on_relist(path)
                continue
            owners = self._owners.get(wd)
            if not owners:
                continue
            if mask & flags.IGNORED:  # the folder is gone (deleted, unmounted)
                for root, rel in list(owners.items()):
                    entry = self.roots.get(root)
                    if entry is not None and entry.dirs.get(rel) == wd:
                        del entry.dirs[rel]
                        if rel == "":  # the root itself: watch it again if it comes back
                            touched.add(root)
                            self._on_relist(root)
                self._owners.pop(wd, None)
                continue
            if mask & (flags.DELETE_SELF | flags.MOVE_SELF):
                if mask & flags.MOVE_SELF:  # its path is stale now; the parent's event says where
                    for root, rel in list(owners.items()):
                        if rel == "" and root in self.roots:  # the root itself moved away
                            touched.add(root)
                            self._on_relist(root)
                continue
            if not name:
                continue
            is_dir = bool(mask & flags.ISDIR)
            for root, folder in list(owners.items()):
                entry = self.roots.get(root)
                if entry is None:
                    continue
                rel = f"{folder}/{name}" if folder else name
                if name == ".gitignore" and not is_dir:
                    touched.add(root)  # what is ignored changed: list the folders again
                    self._on_relist(root)
                    continue
                if name in REPO_NAMES:  # before the rules: they ignore both names
                    touched.add(root)
                    self._on_repos(root)
                    continue
                if entry.rules.ignored(rel, is_dir):
                    continue
                if is_dir and mask & (flags.CREATE | flags.MOVED_TO):
                    self._watch_tree(entry, rel)
                elif is_dir and mask & (flags.DELETE | flags.MOVED_FROM):
                    self._unwatch_tree(entry, rel)
                touched.add(root)
        if touched:
            self._on_change(touched)

    async def close(self) -> None:
        if self._ino is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._ino.fileno())
            self._ino.close()
            self._ino = None
        self.roots.clear()
        self._owners.clear()
