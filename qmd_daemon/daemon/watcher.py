"""Watch the registered collection roots and queue incremental refreshes.

What is watched follows the scanner's rules (watch_scope.py); the events come from inotify on Linux
(inotify_backend.py) or watchfiles elsewhere (watchfiles_backend.py). This module holds what the
daemon talks to: which roots are watched, whether a root is vouched for, and the grouping of
changes. A root's refresh starts once it has seen no change for `step_ms`, or `debounce_ms` after
its first change; `flush(root)` (inotify) hands a root's waiting changes on at once. `mark(root)`
moves on every change heard of under a root and every time its watch is made or dropped, so a
refresh that finds the mark where the last one left it has nothing to walk (vouch.py).
A submodule added, checked out or removed under a root (.gitmodules or a `.git` changed) makes the
root's folders be listed again when its changes settle, git's index written by then; meanwhile the
root is not vouched for.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from qmd_daemon.daemon.inotify_backend import INOTIFY, InotifyBackend, open_inotify
from qmd_daemon.daemon.watch_scope import (
    MAX_WATCHED_DIRS,
    RootSpec,
    WatchedRoot,
    inotify_watch_budget,
    watched_folders,
)
from qmd_daemon.daemon.watchfiles_backend import WatchfilesBackend

log = logging.getLogger("qmd_daemon.watcher")

# A root inotify watches only in part (more folders than the watch budget) or cannot vouch for
# (a network share) is rescanned this often instead, and between scans its watched folders still
# report at once: freshness bounded by this, never a rescan per search.
POLL_SECONDS = 30.0


class RootWatcher:
    """Watches a set of roots; calls `on_change(root_paths)` with the roots that saw changes."""

    def __init__(
        self,
        on_change: Callable[[set[Path]], None],
        excludes: tuple[str, ...],
        *,
        debounce_ms: int = 1600,
        step_ms: int = 400,
        backend: str | None = None,
        poll_s: float = POLL_SECONDS,
    ):
        self.on_change = on_change
        self.excludes = excludes
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self.backend = backend or ("inotify" if INOTIFY else "watchfiles")
        self.max_dirs = inotify_watch_budget() if self.backend == "inotify" else MAX_WATCHED_DIRS
        self.poll_s = poll_s
        self._poll: asyncio.TimerHandle | None = None
        self._error: str | None = None  # inotify could not start
        self._watch: InotifyBackend | WatchfilesBackend | None = None  # made by the first sync
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[Path, list[float]] = {}  # root -> [first change, last change]
        self._timer: asyncio.TimerHandle | None = None
        self._resyncs: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()
        self._closed = False
        self._seq = itertools.count(1)  # one sequence for every root: a mark is never reused
        self._marks: dict[Path, int] = {}  # root -> the sequence number of its latest change
        self._relist_due: set[Path] = set()  # roots whose submodules may have changed (REPO_NAMES)

    # -- what is watched -----------------------------------------------------------------------

    @property
    def _roots(self) -> dict[Path, WatchedRoot]:
        return self._watch.roots if self._watch is not None else {}

    @property
    def roots(self) -> tuple[Path, ...]:
        return tuple(sorted(self._roots))

    @property
    def dirs(self) -> tuple[Path, ...]:
        return watched_folders(self._roots)

    @property
    def error(self) -> str | None:
        return self._error or (self._watch.error if self._watch is not None else None)

    def since(self, root: Path) -> float | None:
        entry = self._roots.get(root)
        return entry.since if entry is not None else None

    def spec(self, root: Path) -> RootSpec | None:
        entry = self._roots.get(root)
        return entry.spec if entry is not None else None

    def vouches(self, root: Path) -> bool:
        """Every change a scan of `root` could index reaches this watcher at once (inotify, every
        folder watched, a local filesystem, no error)."""
        return self._watch is not None and root not in self._relist_due and self._watch.vouches(root)

    def polls(self, root: Path) -> bool:
        """inotify watches `root` but cannot vouch for it (in part only, or a remote filesystem):
        it is rescanned every `poll_s` instead."""
        return isinstance(self._watch, InotifyBackend) and root in self._roots and not self.vouches(root)

    @property
    def polled(self) -> tuple[Path, ...]:
        return tuple(r for r in self.roots if self.polls(r))

    def mark(self, root: Path) -> int | None:
        """Where `root`'s changes stand: two equal marks, each read after `flush(root)`, mean no
        change a scan could index happened between them. None when the watcher cannot vouch for
        the root (polled, in part, remote, watchfiles, re-listing after an overflow)."""
        return self._marks.get(root) if self.vouches(root) else None

    def flush(self, root: Path) -> bool:
        """Take in every change queued before this call; when `root` has changes waiting out the
        debounce, hand them on now. Returns `vouches(root)`."""
        if not isinstance(self._watch, InotifyBackend) or self._closed:
            return False
        self._watch.read()
        if root in self._relist_due:  # listed again now: the refresh asked for follows it
            self._pending.pop(root, None)
            self._relist_due.discard(root)
            self._resync(root)
        elif root in self._pending:
            del self._pending[root]
            self.on_change({root})
        return self.vouches(root)

    async def sync(self, roots: Mapping[Path, RootSpec]) -> None:
        """Watch these roots (and no others). A root whose spec is unchanged keeps its watch
        (watchfiles: its folders are listed again, and the watch restarts when they changed)."""
        if self._closed:
            return
        async with self._lock:
            wanted = {r: s for r, s in roots.items() if _watchable(r)}
            for path in [p for p, e in self._roots.items() if wanted.get(p) != e.spec]:
                self._drop(path)
            if self._watch is None and self.backend == "watchfiles":
                self._watch = WatchfilesBackend(self.on_change, self.excludes)
            if isinstance(self._watch, WatchfilesBackend):
                await self._watch.sync(wanted, self.max_dirs, self.debounce_ms, self.step_ms)
                return
            if self._watch is None:
                try:
                    ino = await open_inotify()
                except OSError as exc:
                    self._error = f"inotify: {exc}"
                    log.warning("file watching is off: %s", self._error)
                    return
                if self._closed:  # closed while it was being made
                    ino.close()
                    return
                self._loop = asyncio.get_running_loop()
                self._watch = InotifyBackend(
                    ino,
                    self._loop,
                    self.excludes,
                    self.max_dirs,
                    on_change=self._changed,
                    on_relist=self._resync,
                    on_repos=self._relist_due.add,
                )
            inotify = self._watch
            for path, spec in wanted.items():
                if path not in inotify.roots:
                    await inotify.add_root(path, spec)
                    self._bump({path})
            self._arm_poll()

    def _bump(self, roots: set[Path]) -> None:
        for root in roots:
            self._marks[root] = next(self._seq)

    def _drop(self, path: Path) -> None:
        self._bump({path})
        self._pending.pop(path, None)
        self._relist_due.discard(path)
        if self._watch is not None:
            self._watch.drop(path)

    def _resync(self, path: Path) -> None:
        """List the root's folders again (a .gitignore changed, the queue overflowed): until that
        is done the root is not vouched for, and a refresh is due after it."""
        inotify = self._watch
        entry = self._roots.get(path)
        if not isinstance(inotify, InotifyBackend) or entry is None or self._loop is None or self._closed:
            return
        spec = entry.spec
        self._drop(path)

        async def again() -> None:
            async with self._lock:
                if path not in inotify.roots and not self._closed:
                    await inotify.add_root(path, spec)
            self._changed({path})
            self._arm_poll()

        task = self._loop.create_task(again())
        self._resyncs.add(task)
        task.add_done_callback(self._resyncs.discard)

    # -- debounce ------------------------------------------------------------------------------

    def _changed(self, roots: set[Path]) -> None:
        self._bump(roots)
        now = time.monotonic()
        for root in roots:
            times = self._pending.setdefault(root, [now, now])
            times[1] = now
        self._arm()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending or self._loop is None or self._closed:
            return
        due = min(
            min(first + self.debounce_ms / 1000, last + self.step_ms / 1000)
            for first, last in self._pending.values()
        )
        self._timer = self._loop.call_at(self._loop.time() + max(0.0, due - time.monotonic()), self._fire_due)

    def _fire_due(self) -> None:
        self._timer = None
        now = time.monotonic()
        due = {
            root
            for root, (first, last) in self._pending.items()
            if now >= min(first + self.debounce_ms / 1000, last + self.step_ms / 1000) - 0.001
        }
        for root in due:
            del self._pending[root]
        for root in due & self._relist_due:  # listed again; its refresh follows that
            due.discard(root)
            self._relist_due.discard(root)
            self._resync(root)
        if due:
            log.info("changes under %s", ", ".join(str(r) for r in sorted(due)))
            self.on_change(due)
        self._arm()

    # -- polling -------------------------------------------------------------------------------

    def _arm_poll(self) -> None:
        if self._poll is None and self._loop is not None and not self._closed and self.polled:
            self._poll = self._loop.call_later(self.poll_s, self._poll_due)

    def _poll_due(self) -> None:
        self._poll = None
        roots = set(self.polled)
        if roots and not self._closed:
            log.info("rescanning (watched in part): %s", ", ".join(str(r) for r in sorted(roots)))
            self.on_change(roots)
        self._arm_poll()

    # -- close ---------------------------------------------------------------------------------

    async def close(self) -> None:
        self._closed = True
        for timer in (self._timer, self._poll):
            if timer is not None:
                timer.cancel()
        self._timer = self._poll = None
        for task in list(self._resyncs):
            task.cancel()
        self._pending.clear()
        self._relist_due.clear()
        if self._watch is not None:
            await self._watch.close()


def _watchable(root: Path) -> bool:
    """Whether ROOT is a folder to watch. One behind a folder this user cannot enter (EACCES:
    Path.is_dir raises it) is not watched: its refresh says it cannot be read. It stopped every
    sync, so the daemon died at its start and no collection was watched."""
    try:
        return root.is_dir()
    except OSError:
        return False
