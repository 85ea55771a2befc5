"""ai-search's 3-second notice words what the daemon reports it is doing. It said "a first search
in a large repository indexes it" whatever the wait was: after an upgrade the daemon re-reads an
index an older version wrote, which an agent took for a fresh install's first indexing. Real
daemon (in this process, on a real port), its refresh held on the index's writer lock by another
process so the question finds it running; the client's function asked from a thread.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from aiohttp import web

from clients.ai_search import daemon_doing, waiting_line
from qmd_daemon.daemon.server import Daemon
from qmd_daemon.engine import Engine
from qmd_daemon.locks import writer_lock_path
from tests.conftest import write_tree
from tests.daemon.support import lock_held_elsewhere


async def _running(daemon: Daemon) -> dict[str, object]:
    for _ in range(600):  # a ceiling
        running = daemon.jobs.activity()["running"]
        if running is not None:
            return dict(running)
        await asyncio.sleep(0.05)
    raise AssertionError("no job started")


async def test_the_notice_says_an_upgrade_re_read_not_a_first_indexing(
    engine: Engine, tmp_path: Path
) -> None:
    tree = write_tree(tmp_path / "tree", {"a.py": "def walrus():\n    return 1\n"})
    engine.add_collection(tree, "tree")
    engine.update(["tree"], progress=False)
    index = sqlite3.connect(engine.settings.index_path)
    with index:  # what an older chunker left: the daemon re-reads it at start
        index.execute("UPDATE collections SET index_format = 'an older chunker'")
    index.close()
    assert await asyncio.to_thread(daemon_doing, str(tree), 60) is None  # no daemon: nothing to say
    with lock_held_elsewhere(writer_lock_path(engine.settings.index_path)):
        daemon = Daemon(engine.settings, watch=False, idle_minutes=30)
        await daemon.start()
        try:
            running = await _running(daemon)
            assert (running["kind"], running["reason"]) == ("refresh", "upgrade")
            assert running["collections"] == ["tree"]
            line = await asyncio.to_thread(daemon_doing, str(tree), 60)
            assert line == (
                "the daemon is re-reading the index of tree after an upgrade (an older version indexed it; "
                "searches meanwhile answer from the old chunks) (results come within about 60 s, --wait "
                "changes it)"
            )
            assert "for the first time" not in line
        finally:
            daemon.jobs.engine.stop_waiting.set()  # the refresh queued on the held lock gives up
            await daemon.close()


async def test_a_search_that_registers_a_collection_asks_for_a_first_indexing(
    engine: Engine, tmp_path: Path
) -> None:
    """The daemon's reason for a search's refresh: `new` for the collection it registered now,
    `changes` for one it already had."""
    tree = write_tree(tmp_path / "tree", {"a.py": "def walrus():\n    return 1\n"})
    daemon = Daemon(engine.settings, watch=False, idle_minutes=30)
    await daemon.start()
    try:
        assert daemon._refresh_reason(["tree"], created=True) == "new"
        engine.add_collection(tree, "tree")
        assert daemon._refresh_reason(["tree"], created=False) == "changes"
        job = daemon.jobs.submit("refresh", ["tree"], reason="changes")
        assert daemon.jobs.submit("refresh", ["tree"], reason="new") is job and job.reason == "new"
        assert await job.wait(60) and job.state == "done", job.error
    finally:
        await daemon.close()


class _DaemonBeforeJobs(Daemon):
    """A daemon of a version whose /health had no `jobs` (left running across an upgrade): today's
    daemon less that key, as an older release cannot be installed here."""

    async def health(self, request: web.Request) -> web.Response:
        answer = await super().health(request)
        body = json.loads(answer.text or "{}")
        body.pop("jobs")
        return web.json_response(body)


async def test_an_older_daemon_gets_the_wording_that_covers_every_wait(
    engine: Engine, tmp_path: Path
) -> None:
    """A daemon that answered /health without `jobs` got "a daemon starting loads its models
    first", while it was indexing the repository (it had started long before)."""
    tree = write_tree(tmp_path / "tree", {"a.py": "def walrus():\n    return 1\n"})
    daemon = _DaemonBeforeJobs(engine.settings, watch=False, idle_minutes=30)
    await daemon.start()
    try:
        ask = {"refresh": True, "collection": False, "daemon": True}
        line = await asyncio.to_thread(lambda: waiting_line(str(tree), 60, **ask))
    finally:
        await daemon.close()
    assert line == (f"waiting for the index of {tree} to catch up (a first search in a large repository "
                    "indexes it; results come within about 60 s, --wait changes it)")


def test_in_process_the_search_itself_indexes(home: Path, tmp_path: Path) -> None:
    """--no-daemon (or QMD_NO_DAEMON=1): no daemon starts, the one-off search indexes the
    repository; the notice said a daemon was starting."""
    line = waiting_line(str(tmp_path), 5, refresh=True, collection=False, daemon=False)
    assert "daemon" not in line and "a first search in a large repository indexes it" in line
    assert waiting_line(str(tmp_path), 5, refresh=False, collection=False, daemon=True) == (
        "waiting for the search to finish"
    )
