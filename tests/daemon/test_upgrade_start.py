"""A daemon started on an index another process is still bringing up to date after an upgrade:
/health answers, and a search past its deadline says the index is being upgraded (not that an
earlier request is still computing), then answers once the upgrade is done. Real daemon, real
index, a real child process holding the upgrade (tests/store/test_schema_upgrade.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp

from qmd_daemon.daemon.server import Daemon
from qmd_daemon.settings import Settings
from qmd_daemon.store.connection import upgrade_lock_path
from tests.daemon.test_server import call, reader_busy
from tests.store.test_schema_upgrade import schema_3_index, start_paused_upgrade


async def test_a_search_during_the_upgrade_says_so(engine: Any, tmp_path: Path) -> None:
    path = schema_3_index(engine, tmp_path)
    child, _, go = start_paused_upgrade(path, tmp_path)
    # watched: the watch reads the collections at start
    d = Daemon(Settings.from_env(), watch=True, search_deadline_s=0.5)
    try:
        await asyncio.wait_for(d.start(), 30)  # listening while the child holds the upgrade
        async with aiohttp.ClientSession() as http:
            status, body = await call(http, d, "POST", "/search", {"query": "alpha"})
            assert status == 503 and body["error"]["code"] == "timeout", body
            assert "being brought up to date after an upgrade" in body["error"]["message"]
            status, _ = await call(http, d, "GET", "/health")
            assert status == 200
            go.write_text("1")
            assert await asyncio.to_thread(child.wait, 60) == 0
            for _ in range(100):  # the reader finishes its wait, then takes the next search
                status, body = await call(http, d, "POST", "/search", {"query": "alpha"})
                if status == 200:
                    break
            assert [hit["path"] for hit in body["hits"]] == ["a.py"], body
    finally:
        go.write_text("1")
        await asyncio.to_thread(child.wait, 60)
        await d.close()


async def test_a_lock_file_left_by_a_killed_upgrade_is_not_taken_for_one(home: Path) -> None:
    d = Daemon(Settings.from_env(), watch=False, search_deadline_s=0.5)
    await d.start()
    try:
        upgrade_lock_path(d.settings.index_path).write_text("12345")  # its holder died: no lock held
        async with reader_busy(d), aiohttp.ClientSession() as http:
            status, body = await call(http, d, "POST", "/search", {"query": "anything"})
        assert status == 503 and "computing an earlier request" in body["error"]["message"], body
    finally:
        await d.close()
