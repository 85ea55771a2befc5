"""Watch the registered collection roots and queue incremental refreshes.

What is watched and which changes count follow the scanner's own rules (`IgnoreRules`, shared with
qmd_daemon/ingest/scan.py): the built-in excludes, the collection's ignore patterns and mask, and
the tree's .gitignore files (files git tracks in spite of them excepted). The watch is not
recursive from the root: the watcher lists the root's folders itself, pruning the ignored ones
(node_modules/, .venv/, .git/, build/ ...), and watches each of those, so an `npm install` or a
virtualenv costs no kernel watches and no events. Changes are grouped: a root's refresh starts once
it has seen no change for `step_ms`, or `debounce_ms` after its first change.

Two backends:

- Linux: inotify (through `inotify_simple`), its descriptor read by the event loop. Events arrive
  as the kernel queues them, an idle daemon is never woken, and `flush(root)` takes in every change
  made before it was called, so the daemon can vouch for a root (`vouches`): every folder a scan
  could index is watched, on a local filesystem. Folders created or moved in are watched as their
  event arrives.
- elsewhere: watchfiles, whose Rust side holds events for a poll step before Python sees them; it
  starts refreshes but vouches for nothing (the client keeps its own `git status` check). Folders
  created later are picked up when the refresh their creation triggers re-syncs the list.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import re
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from qmd_daemon.errors import QmdError
from qmd_daemon.ingest.scan import IgnoreRules, tracked_but_ignored

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

MAX_WATCHED_DIRS = 20_000
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


class _Subtree:
    """`rules`, asked about paths relative to folder `base` instead of the root (for watch_dirs)."""

    def __init__(self, rules: IgnoreRules, base: str):
        self.rules, self.base = rules, base

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        return self.rules.ignored(f"{self.base}/{rel}", is_dir)


def watch_dirs(
    root: Path, rules: IgnoreRules | _Subtree, limit: int = MAX_WATCHED_DIRS
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


def _local(path: Path) -> bool:
    kind = filesystem_type(path)
    return kind is None or not (kind in REMOTE_FS or kind.startswith("fuse."))


@dataclass
class _Root:
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


def _prepare(path: Path, spec: RootSpec, excludes: tuple[str, ...], limit: int) -> tuple[_Root, list[str]]:
    rules = IgnoreRules(
        path, mask=spec.mask, ignore=list(spec.ignore), excludes=excludes, keep=tracked_but_ignored(path)
    )
    rels, complete = watch_dirs(path, rules, limit)
    return _Root(path, spec, rules, local=_local(path), complete=complete), rels


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
    ):
        self.on_change = on_change
        self.excludes = excludes
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self.max_dirs = MAX_WATCHED_DIRS
        self.backend = backend or ("inotify" if INOTIFY else "watchfiles")
        self.error: str | None = None
        self._roots: dict[Path, _Root] = {}
        self._owners: dict[int, dict[Path, str]] = {}  # wd -> {root: folder}
        self._ino: INotify | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[Path, list[float]] = {}  # root -> [first change, last change]
        self._timer: asyncio.TimerHandle | None = None
        self._resyncs: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None  # watchfiles
        self._stop: asyncio.Event | None = None
        self._closed = False

    # -- what is watched -----------------------------------------------------------------------

    @property
    def roots(self) -> tuple[Path, ...]:
        return tuple(sorted(self._roots))

    @property
    def dirs(self) -> tuple[Path, ...]:
        return tuple(sorted({r.path / d if d else r.path for r in self._roots.values() for d in r.dirs}))

    def since(self, root: Path) -> float | None:
        entry = self._roots.get(root)
        return entry.since if entry is not None else None

    def spec(self, root: Path) -> RootSpec | None:
        entry = self._roots.get(root)
        return entry.spec if entry is not None else None

    def vouches(self, root: Path) -> bool:
        """Every change a scan of `root` could index reaches this watcher at once (inotify, every
        folder watched, a local filesystem, no error)."""
        entry = self._roots.get(root)
        return (
            self._ino is not None
            and self.error is None
            and entry is not None
            and entry.since is not None
            and entry.complete
            and entry.local
        )

    def flush(self, root: Path) -> bool:
        """Take in every change queued before this call; when `root` has changes waiting out the
        debounce, hand them on now. Returns `vouches(root)`."""
        if self._ino is None:
            return False
        self._read()
        if root in self._pending:
            del self._pending[root]
            self.on_change({root})
        return self.vouches(root)

    async def sync(self, roots: Mapping[Path, RootSpec]) -> None:
        """Watch these roots (and no others). A root whose spec is unchanged keeps its watch
        (watchfiles: its folders are listed again, and the watch restarts when they changed)."""
        if self._closed:
            return
        async with self._lock:
            wanted = {r: s for r, s in roots.items() if r.is_dir()}
            for path in [p for p, e in self._roots.items() if wanted.get(p) != e.spec]:
                self._drop(path)
            if self.backend == "watchfiles":
                await self._sync_watchfiles(wanted)
                return
            if self._ino is None:
                try:
                    if INotify is None:
                        raise OSError(errno.ENOSYS, "inotify_simple is not installed")
                    # in a thread: inotify_simple finds libc with ctypes.util.find_library (`ldconfig -p`)
                    ino = await asyncio.to_thread(INotify, nonblocking=True)
                except OSError as exc:
                    self.error = f"inotify: {exc}"
                    log.warning("file watching is off: %s", self.error)
                    return
                if self._closed:  # closed while it was being made
                    ino.close()
                    return
                self._ino = ino
                self._loop = asyncio.get_running_loop()
                self._loop.add_reader(self._ino.fileno(), self._read)
            for path, spec in wanted.items():
                if path not in self._roots:
                    await self._add_root(path, spec)

    # -- inotify -------------------------------------------------------------------------------

    def _budget(self) -> int:
        return max(0, self.max_dirs - sum(len(r.dirs) for r in self._roots.values()))

    async def _add_root(self, path: Path, spec: RootSpec) -> None:
        try:
            entry, rels = await asyncio.to_thread(_prepare, path, spec, self.excludes, self._budget())
        except (OSError, QmdError) as exc:
            log.warning("not watching %s: %s", path, exc)
            return
        if self._closed or self._ino is None:
            return
        self._roots[path] = entry
        for rel in rels:
            self._watch(entry, rel)
        if "" not in entry.dirs:  # the root itself could not be watched (gone, unreadable)
            entry.complete = False
        entry.since = time.monotonic()
        if not entry.complete:
            log.warning("%s is watched in part only (%d folders)", path, len(entry.dirs))

    def _watch(self, entry: _Root, rel: str) -> None:
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

    def _unwatch(self, entry: _Root, rel: str) -> None:
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

    def _drop(self, path: Path) -> None:
        entry = self._roots.pop(path, None)
        self._pending.pop(path, None)
        if entry is not None:
            for rel in list(entry.dirs):
                self._unwatch(entry, rel)

    def _watch_tree(self, entry: _Root, rel: str) -> None:
        """A folder appeared (created, moved in): watch it and the folders in it."""
        rels, complete = watch_dirs(entry.path / rel, _Subtree(entry.rules, rel), self._budget())
        entry.complete = entry.complete and complete
        for sub in rels:
            self._watch(entry, f"{rel}/{sub}" if sub else rel)

    def _unwatch_tree(self, entry: _Root, rel: str) -> None:
        for sub in [d for d in entry.dirs if d == rel or d.startswith(rel + "/")]:
            self._unwatch(entry, sub)

    def _read(self) -> None:
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
                touched.update(self._roots)
                for path in list(self._roots):
                    self._resync(path)
                continue
            owners = self._owners.get(wd)
            if not owners:
                continue
            if mask & flags.IGNORED:  # the folder is gone (deleted, unmounted)
                for root, rel in list(owners.items()):
                    entry = self._roots.get(root)
                    if entry is not None and entry.dirs.get(rel) == wd:
                        del entry.dirs[rel]
                        if rel == "":  # the root itself: watch it again if it comes back
                            touched.add(root)
                            self._resync(root)
                self._owners.pop(wd, None)
                continue
            if mask & (flags.DELETE_SELF | flags.MOVE_SELF):
                if mask & flags.MOVE_SELF:  # its path is stale now; the parent's event says where
                    for root, rel in list(owners.items()):
                        if rel == "" and root in self._roots:  # the root itself moved away
                            touched.add(root)
                            self._resync(root)
                continue
            if not name:
                continue
            is_dir = bool(mask & flags.ISDIR)
            for root, folder in list(owners.items()):
                entry = self._roots.get(root)
                if entry is None:
                    continue
                rel = f"{folder}/{name}" if folder else name
                if name == ".gitignore" and not is_dir:
                    touched.add(root)  # what is ignored changed: list the folders again
                    self._resync(root)
                    continue
                if entry.rules.ignored(rel, is_dir):
                    continue
                if is_dir and mask & (flags.CREATE | flags.MOVED_TO):
                    self._watch_tree(entry, rel)
                elif is_dir and mask & (flags.DELETE | flags.MOVED_FROM):
                    self._unwatch_tree(entry, rel)
                touched.add(root)
        if touched:
            self._changed(touched)

    def _resync(self, path: Path) -> None:
        """List the root's folders again (a .gitignore changed, the queue overflowed): until that
        is done the root is not vouched for, and a refresh is due after it."""
        entry = self._roots.get(path)
        if entry is None or self._loop is None or self._closed:
            return
        spec = entry.spec
        self._drop(path)

        async def again() -> None:
            async with self._lock:
                if path not in self._roots and not self._closed:
                    await self._add_root(path, spec)
            self._changed({path})

        task = self._loop.create_task(again())
        self._resyncs.add(task)
        task.add_done_callback(self._resyncs.discard)

    # -- debounce ------------------------------------------------------------------------------

    def _changed(self, roots: set[Path]) -> None:
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
        if due:
            log.info("changes under %s", ", ".join(str(r) for r in sorted(due)))
            self.on_change(due)
        self._arm()

    # -- watchfiles ----------------------------------------------------------------------------

    async def _sync_watchfiles(self, wanted: dict[Path, RootSpec]) -> None:
        budget = self.max_dirs
        fresh: dict[Path, _Root] = {}
        for path, spec in sorted(wanted.items()):
            try:
                entry, rels = await asyncio.to_thread(_prepare, path, spec, self.excludes, budget)
            except (OSError, QmdError) as exc:
                log.warning("not watching %s: %s", path, exc)
                continue
            entry.dirs = {rel: -1 for rel in rels}
            budget -= len(rels)
            fresh[path] = entry
        before = {p: set(e.dirs) for p, e in self._roots.items()}
        self._roots = fresh
        running = self._task is not None and not self._task.done()
        if running and before == {p: set(e.dirs) for p, e in fresh.items()}:
            return
        self._stop_watchfiles()
        dirs = self.dirs
        if dirs and not self._closed:
            self._stop = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run_watchfiles(dirs, self._stop))

    def _keep(self, _change: object, raw: str) -> bool:
        path = Path(raw)
        is_dir = os.path.isdir(raw)
        for entry in self._roots.values():
            rel = entry.rel(path)
            if rel and not entry.rules.ignored(rel, is_dir):
                return True
        return False

    async def _run_watchfiles(self, dirs: tuple[Path, ...], stop: asyncio.Event) -> None:
        try:
            from watchfiles import awatch
        except ImportError:  # pragma: no cover - a dependency
            self.error = "watchfiles is not installed"
            return
        try:
            async for changes in awatch(
                *dirs,
                watch_filter=self._keep,
                debounce=self.debounce_ms,
                step=self.step_ms,
                stop_event=stop,
                recursive=False,
                ignore_permission_denied=True,
            ):
                touched = {
                    e.path for _, p in changes for e in self._roots.values() if e.rel(Path(p)) is not None
                }
                if touched:
                    log.info("changes under %s", ", ".join(str(t) for t in sorted(touched)))
                    self.on_change(touched)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. the inotify watch limit; keep serving
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("file watching stopped: %s", self.error)

    def _stop_watchfiles(self) -> None:
        if self._stop is not None:
            self._stop.set()
        self._stop = None

    # -- close ---------------------------------------------------------------------------------

    async def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for task in list(self._resyncs):
            task.cancel()
        self._pending.clear()
        if self._ino is not None:
            if self._loop is not None:
                with contextlib.suppress(Exception):
                    self._loop.remove_reader(self._ino.fileno())
            self._ino.close()
            self._ino = None
        self._roots.clear()
        self._owners.clear()
        self._stop_watchfiles()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 2.0)  # ends within one step
            except (TimeoutError, Exception):  # noqa: BLE001
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._task
            self._task = None
