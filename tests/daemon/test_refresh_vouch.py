"""The watcher-vouched refresh on a real daemon, a real inotify watch and real files: a refresh of
a collection whose root saw no change since its last refresh does not walk it; any change, one
landing during a refresh, a queue overflow, a polled root or a new daemon make it walk again."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from qmd_daemon.daemon.server import Daemon
from qmd_daemon.ingest import indexer
from qmd_daemon.settings import Settings
from tests.daemon.support import make_repo

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the daemon vouches for roots with inotify only"
)
NAME = "repo-proj"


class Walks:
    """Counts the scans of the indexer (the real scan runs), and runs `during` after the next one:
    what happens while a refresh is between its walk and its commit."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.during: Callable[[], None] | None = None
        real = indexer.scan

        def counted(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            self.count += 1
            if self.during is not None:
                during, self.during = self.during, None
                during()
            return result

        monkeypatch.setattr(indexer, "scan", counted)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Walks:
    return Walks(monkeypatch)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "proj")
    (root / ".gitignore").write_text("*.log\n")
    return root.resolve()


@asynccontextmanager
async def running(max_dirs: int | None = None) -> AsyncIterator[Daemon]:
    """A started watching daemon, closed after the block."""
    d = Daemon(Settings.from_env(), watch=True, auto_embed=False)
    assert d.watcher is not None
    d.watcher.debounce_ms = d.watcher.step_ms = 60_000  # only the refresh's own flush hands changes on
    if max_dirs is not None:
        d.watcher.max_dirs = max_dirs
    await d.start()
    try:
        yield d
    finally:
        await d.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def post(http: aiohttp.ClientSession, d: Daemon, path: str, body: dict[str, Any]) -> dict[str, Any]:
    async with http.post(
        f"http://127.0.0.1:{d.port}{path}", json=body, headers={"Authorization": f"Bearer {d.token}"}
    ) as resp:
        assert resp.status == 200, await resp.text()
        return dict(await resp.json())


async def refresh(http: aiohttp.ClientSession, d: Daemon, repo: Path) -> dict[str, Any]:
    """A refresh of every collection, as `/refresh` without a target asks; the job's result."""
    body = await post(http, d, "/refresh", {"wait": 30})
    (job,) = body["jobs"]
    assert job["state"] == "done", job
    return dict(job["result"])


async def finds(http: aiohttp.ClientSession, d: Daemon, repo: Path, word: str, **extra: Any) -> bool:
    body = await post(http, d, "/search", {"query": word, "path": str(repo), **extra})
    return any(word in h["snippet"] for h in body["hits"])


async def settled(d: Daemon, http: aiohttp.ClientSession, repo: Path) -> None:
    """Register the repository and refresh until the daemon vouches for it (the second refresh
    after registering: the first one reads a collection the index did not hold yet)."""
    await post(http, d, "/refresh", {"path": str(repo), "wait": 30})
    for _ in range(3):
        if (await refresh(http, d, repo))["vouched"] == [NAME]:
            return
    raise AssertionError("the daemon never vouched for the repository")


async def test_a_vouched_refresh_walks_nothing_and_an_edit_is_found(
    home: Path, repo: Path, walks: Walks, http: aiohttp.ClientSession
) -> None:
    async with running() as d:
        await settled(d, http, repo)
        before = walks.count
        result = await refresh(http, d, repo)
        assert result == {"reports": [], "vouched": [NAME]} and walks.count == before
        # written just before the refresh, its event still in the kernel's queue: walked, found
        (repo / "src" / "client.py").write_text("def edited_right_after_a_refresh():\n    pass\n")
        result = await refresh(http, d, repo)
        assert result["vouched"] == [] and walks.count == before + 1
        assert [r["changed"] for r in result["reports"]] == [1]
        assert await finds(http, d, repo, "edited_right_after_a_refresh")
        # ai-search's explicit refresh (a search asking for one) walks after an edit too
        (repo / "docs" / "guide.md").write_text("# Guide\n\nexplicitly_refreshed_words here\n")
        assert await finds(http, d, repo, "explicitly_refreshed_words", refresh=True)
        assert (await refresh(http, d, repo))["vouched"] == [NAME]
    # a new daemon has not seen what changed while none ran: it walks before it vouches
    (repo / "src" / "offline.py").write_text("def written_while_no_daemon_ran():\n    pass\n")
    async with running() as d:
        result = await refresh(http, d, repo)
        assert result["vouched"] == [] and [r["added"] for r in result["reports"]] == [1]


async def test_a_change_during_a_refresh_makes_the_next_one_walk(
    home: Path, repo: Path, walks: Walks, http: aiohttp.ClientSession
) -> None:
    async with running() as d:
        await settled(d, http, repo)
        (repo / "pool" / "new.go").write_text("package pool\n")  # so that this refresh walks

        def edit_behind_the_walk() -> None:  # the walk has stat'ed this file already
            (repo / "src" / "client.py").write_text("def landed_during_the_refresh():\n    pass\n")

        before = walks.count
        walks.during = edit_behind_the_walk
        result = await refresh(http, d, repo)
        assert result["vouched"] == [] and walks.during is None
        assert [r["changed"] for r in result["reports"]] == [0]  # that walk missed the edit
        # the refresh the new file's event called for (queued by the first one's flush) starts
        # after the edit's event moved the mark: it walks, where a "changed" flag cleared at the
        # end of the first refresh would have let it skip
        deadline = time.monotonic() + 20
        while not d.jobs.idle and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert walks.count == before + 2
        assert await finds(http, d, repo, "landed_during_the_refresh")
        assert (await refresh(http, d, repo))["vouched"] == [NAME]


async def test_an_inotify_queue_overflow_drops_the_vouch(
    home: Path, repo: Path, walks: Walks, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    async with running() as d:
        watcher = d.watcher
        assert watcher is not None
        await settled(d, http, repo)
        vouched_at = watcher.mark(repo)
        # fill the kernel's queue with events of ignored files (no await: the loop reads nothing
        # meanwhile), so the edit after them is dropped and only IN_Q_OVERFLOW tells of it
        limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
        for i in range(limit // 2 + 100):
            (repo / f"noise-{i}.log").touch()  # IN_CREATE + IN_CLOSE_WRITE each
        (repo / "src" / "client.py").write_text("def lost_in_the_overflow():\n    pass\n")
        # the loop reads the overflow and lists every root again: wait for the new watch
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and watcher.mark(repo) in (None, vouched_at):
            await asyncio.sleep(0.05)
        assert "inotify queue overflow" in caplog.text and watcher.vouches(repo)
        before = walks.count
        result = await refresh(http, d, repo)
        assert result["vouched"] == [] and [r["changed"] for r in result["reports"]] == [1]
        assert walks.count == before + 1
        assert await finds(http, d, repo, "lost_in_the_overflow")


async def test_a_root_watched_in_part_is_never_vouched_for(
    home: Path, repo: Path, walks: Walks, http: aiohttp.ClientSession
) -> None:
    async with running(max_dirs=2) as d:  # the repository has four folders: polled, not vouched for
        await post(http, d, "/refresh", {"path": str(repo), "wait": 30})
        assert d.watcher is not None and d.watcher.polls(repo)
        before = walks.count
        for _ in range(3):
            assert (await refresh(http, d, repo))["vouched"] == []
        assert walks.count == before + 3
