"""A daemon started on an index whose chunks still wait for vectors (the daemon embedding them was
stopped by an upgrade's installer, or replaced by a newer client, and took its job with it)
embeds them once a search finds them waiting, instead of answering keyword-only until the next
session's hook asks. Real daemon, real index, real MiniLM (small profile)."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from qmd_daemon.daemon.server import Daemon
from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings
from tests.conftest import SAMPLE_PY, indexed
from tests.daemon.test_server import call


async def test_a_search_resumes_the_embedding_a_stopped_daemon_left(
    small_engine: Engine, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    name = indexed(small_engine, root, {"src/client.py": SAMPLE_PY})  # indexed, never embedded
    small_engine.close()
    d = Daemon(Settings.from_env(), watch=False)
    await d.start()
    try:
        async with aiohttp.ClientSession() as http:
            status, body = await call(http, d, "POST", "/search", {"query": "client", "path": str(root)})
            assert status == 200 and body["pending_vectors"] > 0, body
            job = d.jobs.latest("embed", name)
            assert job is not None, "no embed job: the chunks would wait for the next session's hook"
            assert await job.wait(300) and job.state == "done", job.as_dict()
            status, body = await call(http, d, "POST", "/search", {"query": "client", "path": str(root)})
            assert status == 200 and body["pending_vectors"] == 0, body
    finally:
        await d.close()
