"""No cliff past the watch budget: the budget follows the kernel's inotify limit, and a root with
more folders than it is watched in part and rescanned on a timer (never a rescan per search)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from qmd_daemon.daemon.watch_scope import MAX_WATCHED_DIRS, inotify_watch_budget
from qmd_daemon.daemon.watcher import RootWatcher
from qmd_daemon.settings import DEFAULT_EXCLUDES
from tests.daemon.support import make_repo
from tests.daemon.test_watcher import SPEC, Recorder

LINUX = sys.platform.startswith("linux")


@pytest.mark.parametrize(
    ("limit", "budget"),
    [("8192\n", 4096), ("65536\n", 49152), ("524288\n", 393216), ("not a number", MAX_WATCHED_DIRS)],
)
def test_budget_follows_the_kernel_limit_with_headroom(tmp_path: Path, limit: str, budget: int) -> None:
    limits = tmp_path / "max_user_watches"
    limits.write_text(limit)
    assert inotify_watch_budget(limits) == budget
    assert inotify_watch_budget(tmp_path / "missing") == MAX_WATCHED_DIRS


@pytest.mark.skipif(not LINUX, reason="inotify is Linux only")
def test_this_machine_budget_is_under_its_limit() -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    assert 0 < RootWatcher(lambda roots: None, DEFAULT_EXCLUDES, backend="inotify").max_dirs < limit


@pytest.mark.skipif(not LINUX, reason="inotify is Linux only")
async def test_a_root_past_the_budget_is_polled_and_its_unwatched_changes_arrive(tmp_path: Path) -> None:
    files = {f"pkg{n}/mod{n}/m.py": f"x = {n}\n" for n in range(6)}
    repo = make_repo(tmp_path / "proj", files).resolve()
    recorder = Recorder()
    watcher = RootWatcher(
        recorder, DEFAULT_EXCLUDES, debounce_ms=200, step_ms=50, backend="inotify", poll_s=0.5
    )
    watcher.max_dirs = 4  # fewer than the repository's 13 folders
    try:
        await watcher.sync({repo: SPEC})
        assert 0 < len(watcher.dirs) <= 4
        assert not watcher.vouches(repo) and watcher.polls(repo) and watcher.polled == (repo,)
        await recorder.wait_for_call(2)  # no change made: the timer rescans
        assert recorder.calls[:2] == [{repo}, {repo}]
    finally:
        await watcher.close()
    calls = len(recorder.calls)
    await asyncio.sleep(1.0)
    assert len(recorder.calls) == calls  # closed: no more rescans


@pytest.mark.skipif(not LINUX, reason="inotify is Linux only")
async def test_a_whole_root_is_not_polled(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"src/app.py": "x = 1\n"}).resolve()
    recorder = Recorder()
    watcher = RootWatcher(recorder, DEFAULT_EXCLUDES, backend="inotify", poll_s=0.2)
    try:
        await watcher.sync({repo: SPEC})
        assert watcher.vouches(repo) and not watcher.polls(repo)
        await asyncio.sleep(0.8)
        assert recorder.calls == []
    finally:
        await watcher.close()
