"""Watch the registered collection roots and queue incremental refreshes.

watchfiles (inotify / FSEvents / ReadDirectoryChangesW) groups changes over a debounce window. The
watch is not recursive from the root: the daemon lists the root's folders itself, pruning excluded
ones (node_modules/, .venv/, .git/, build/ ...), and watches each of those non-recursively, so an
`npm install` or a virtualenv costs no kernel watches and no events. Folders created later are
picked up when the refresh their creation triggers re-syncs the list. Events for excluded globs
are dropped before they cost a refresh. Between checks the Rust side sleeps in `step`-sized naps,
so an idle watcher costs a few wakeups a second and no scanning.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import logging
import os
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("qmd_daemon.watcher")


MAX_WATCHED_DIRS = 20_000


def _split_excludes(excludes: tuple[str, ...]) -> tuple[set[str], list[str], list[str]]:
    dir_names = {e.rstrip("/") for e in excludes if e.endswith("/") and not any(c in e for c in "*?[")}
    dir_globs = [e.rstrip("/") for e in excludes if e.endswith("/") and any(c in e for c in "*?[")]
    file_globs = [e for e in excludes if not e.endswith("/")]
    return dir_names | {".git", ".hg", ".svn"}, dir_globs, file_globs


def watch_dirs(
    roots: list[Path], excludes: tuple[str, ...], limit: int = MAX_WATCHED_DIRS
) -> tuple[Path, ...]:
    """Every folder under `roots` that is not excluded, breadth first, at most `limit`."""
    dir_names, dir_globs, _ = _split_excludes(excludes)
    out: list[Path] = []
    queue = list(roots)
    while queue and len(out) < limit:
        folder = queue.pop(0)
        out.append(folder)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            if entry.name in dir_names or any(fnmatch.fnmatchcase(entry.name, g) for g in dir_globs):
                continue
            queue.append(Path(entry.path))
    if queue:
        log.warning("watching the first %d folders only (%d more not watched)", limit, len(queue))
    return tuple(out)


def make_filter(excludes: tuple[str, ...]) -> Callable[[object, str], bool]:
    dir_names, dir_globs, file_globs = _split_excludes(excludes)

    def keep(_change: object, path: str) -> bool:
        parts = Path(path).parts
        for part in parts[:-1]:
            if part in dir_names or any(fnmatch.fnmatchcase(part, g) for g in dir_globs):
                return False
        name = parts[-1] if parts else ""
        if name in dir_names or any(fnmatch.fnmatchcase(name, g) for g in dir_globs):
            return False
        if name.endswith((".pyc", ".swp", "~")) or name.startswith(".#"):
            return False
        return not any(fnmatch.fnmatchcase(name, g) for g in file_globs)

    return keep


class RootWatcher:
    """Watches a set of roots; calls `on_change(root_paths)` with the roots that saw changes."""

    def __init__(
        self,
        on_change: Callable[[set[Path]], None],
        excludes: tuple[str, ...],
        *,
        debounce_ms: int = 1600,
        step_ms: int = 400,
    ):
        self.on_change = on_change
        self.filter = make_filter(excludes)
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self.excludes = excludes
        self.max_dirs = MAX_WATCHED_DIRS
        self.roots: tuple[Path, ...] = ()
        self.dirs: tuple[Path, ...] = ()
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self.error: str | None = None

    async def sync(self, roots: list[Path]) -> None:
        """Watch these roots (re-listing their folders); restarts the watch only when they changed."""
        wanted = tuple(sorted({r for r in roots if r.is_dir()}))
        dirs = await asyncio.to_thread(watch_dirs, list(wanted), self.excludes, self.max_dirs)
        running = self._task is not None and not self._task.done()
        if (wanted, dirs) == (self.roots, self.dirs) and running:
            return
        self.stop_nowait()
        self.roots, self.dirs = wanted, dirs
        if dirs:
            self._stop = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(wanted, dirs, self._stop))

    def _owner(self, path: Path, roots: tuple[Path, ...]) -> Path | None:
        best = None
        for root in roots:
            if (path == root or root in path.parents) and (best is None or len(root.parts) > len(best.parts)):
                best = root
        return best

    async def _run(self, roots: tuple[Path, ...], dirs: tuple[Path, ...], stop: asyncio.Event) -> None:
        try:
            from watchfiles import awatch
        except ImportError:  # pragma: no cover - a dependency
            self.error = "watchfiles is not installed"
            return
        try:
            async for changes in awatch(
                *dirs,
                watch_filter=self.filter,
                debounce=self.debounce_ms,
                step=self.step_ms,
                stop_event=stop,
                recursive=False,
                ignore_permission_denied=True,
            ):
                touched = {o for _, p in changes if (o := self._owner(Path(p), roots)) is not None}
                if touched:
                    log.info("changes under %s", ", ".join(str(t) for t in sorted(touched)))
                    self.on_change(touched)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. the inotify watch limit; keep serving
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("file watching stopped: %s", self.error)

    def stop_nowait(self) -> None:
        if self._stop is not None:
            self._stop.set()
        self._stop = None

    async def close(self) -> None:
        self.stop_nowait()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 2.0)  # ends within one step
            except (TimeoutError, Exception):  # noqa: BLE001
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._task
            self._task = None
