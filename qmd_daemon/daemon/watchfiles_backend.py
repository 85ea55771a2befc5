"""The watch backend where there is no inotify (macOS, Windows): watchfiles.

watchfiles' Rust side holds events for a poll step before Python sees them, so a change made just
before a request may not have arrived yet: this backend starts refreshes but vouches for nothing
(the client keeps its own `git ls-files` + stat check). Folders created later are picked up when the
refresh their creation triggers re-syncs the list.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

from qmd_daemon.daemon.watch_scope import RootSpec, WatchedRoot, prepare_root, watched_folders
from qmd_daemon.errors import QmdError

log = logging.getLogger("qmd_daemon.watcher")


class WatchfilesBackend:
    """One watchfiles task over the folders of every root, restarted when that list changes;
    calls `on_change(roots)` with the roots each debounced batch touched."""

    def __init__(self, on_change: Callable[[set[Path]], None], excludes: tuple[str, ...]):
        self.roots: dict[Path, WatchedRoot] = {}
        self.error: str | None = None
        self.on_change = on_change
        self.excludes = excludes
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._closed = False

    def vouches(self, root: Path) -> bool:
        return False  # events wait out a poll step in Rust: a flush could not take them in

    def drop(self, path: Path) -> None:
        self.roots.pop(path, None)

    async def sync(self, wanted: dict[Path, RootSpec], max_dirs: int, debounce_ms: int, step_ms: int) -> None:
        """List every root's folders again; restart the watch when they changed."""
        budget = max_dirs
        fresh: dict[Path, WatchedRoot] = {}
        for path, spec in sorted(wanted.items()):
            try:
                entry, rels = await asyncio.to_thread(prepare_root, path, spec, self.excludes, budget)
            except (OSError, QmdError) as exc:
                log.warning("not watching %s: %s", path, exc)
                continue
            entry.dirs = {rel: -1 for rel in rels}
            budget -= len(rels)
            fresh[path] = entry
        before = {p: set(e.dirs) for p, e in self.roots.items()}
        self.roots = fresh
        running = self._task is not None and not self._task.done()
        if running and before == {p: set(e.dirs) for p, e in fresh.items()}:
            return
        self._stop_watch()
        dirs = watched_folders(self.roots)
        if dirs and not self._closed:
            self._stop = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(
                self._run(dirs, self._stop, debounce_ms, step_ms)
            )

    def _keep(self, _change: object, raw: str) -> bool:
        path = Path(raw)
        is_dir = os.path.isdir(raw)
        for entry in self.roots.values():
            rel = entry.rel(path)
            if rel and not entry.rules.ignored(rel, is_dir):
                return True
        return False

    async def _run(self, dirs: tuple[Path, ...], stop: asyncio.Event, debounce_ms: int, step_ms: int) -> None:
        try:
            from watchfiles import awatch
        except ImportError:  # pragma: no cover - a dependency
            self.error = "watchfiles is not installed"
            return
        try:
            async for changes in awatch(
                *dirs,
                watch_filter=self._keep,
                debounce=debounce_ms,
                step=step_ms,
                stop_event=stop,
                recursive=False,
                ignore_permission_denied=True,
            ):
                touched = {
                    e.path for _, p in changes for e in self.roots.values() if e.rel(Path(p)) is not None
                }
                if touched:
                    log.info("changes under %s", ", ".join(str(t) for t in sorted(touched)))
                    self.on_change(touched)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. the inotify watch limit; keep serving
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("file watching stopped: %s", self.error)

    def _stop_watch(self) -> None:
        if self._stop is not None:
            self._stop.set()
        self._stop = None

    async def close(self) -> None:
        self._closed = True
        self.roots.clear()
        self._stop_watch()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 2.0)  # ends within one step
            except (TimeoutError, Exception):  # noqa: BLE001
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._task
            self._task = None
