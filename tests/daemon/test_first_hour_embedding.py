"""Deep vectors in a first hour: every searched repository gets them, the current one first, and
the work resumes after a restart.

Walked on a fresh install (four repositories, small profile, CPU, ~15 minutes): each `qmd-daemon
stop` or installer run cut the embed job short, and the next daemon embedded only the collection
searched last (libuv: 64 of 5,012 chunks after 15 minutes); a repository searched while another's
long job ran waited for all of it. Real daemon and job queue, real index, real MiniLM.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from clients._qmd_client import vectors_line
from qmd_daemon.daemon.jobs import JobQueue
from qmd_daemon.daemon.server import Daemon
from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings
from qmd_daemon.vectorize import EmbedHint
from tests.conftest import SAMPLE_PY, indexed
from tests.daemon.support import many_small_chunks, running_embed
from tests.daemon.test_server import call


def _pending(settings: Settings, name: str) -> int:
    """Chunks of `name` without a deep vector, read on a connection of its own (the writer's is busy)."""
    reader = Engine(settings)
    try:
        return int(reader.pending_vectors([name]) or 0)
    finally:
        reader.close()


async def test_a_started_daemon_embeds_every_collection_an_earlier_one_left(
    small_engine: Engine, tmp_path: Path
) -> None:
    first = "big"
    small_engine.add_collection(many_small_chunks(tmp_path / "big"), first)
    small_engine.update([first], progress=False)
    second = indexed(small_engine, tmp_path / "two", {"lib/walrus.py": "def walrus():\n    return 1\n"})
    settings = small_engine.settings
    small_engine.close()
    assert _pending(settings, first) > 0 and _pending(settings, second) > 0  # a stop cut the job short
    d = Daemon(settings, watch=False, idle_minutes=30, preload=True)  # as `serve` starts it
    await d.start()
    try:
        async with aiohttp.ClientSession() as http:  # a search while it embeds: the answer says so
            status, body = await call(http, d, "POST", "/search", {"query": "score", "collections": [first]})
        assert status == 200 and body["pending_vectors"] > 0 and body["embedding"] is True, body
        assert "the daemon is embedding them in the background" in (vectors_line(body) or ("", ""))[1]
        for _ in range(1800):  # a ceiling (0.1 s steps); no other request is made
            if d.jobs.snapshot()["recent"] and d.jobs.idle:
                break
            await asyncio.sleep(0.1)
        done = [j for j in d.jobs.snapshot()["recent"] if j["kind"] == "embed"]
        assert done and done[-1]["state"] == "done", d.jobs.snapshot()
        assert _pending(settings, first) == 0 and _pending(settings, second) == 0
        rate = d.jobs.embed_rate()  # measured by that job: the next answer's estimate divides by it
        assert rate is not None and rate > 0
    finally:
        await d.close()


async def test_a_daemon_with_nothing_waiting_starts_no_embed_job(
    small_engine: Engine, tmp_path: Path
) -> None:
    name = indexed(small_engine, tmp_path / "one", {"src/client.py": SAMPLE_PY})
    small_engine.embed([name], progress=False)
    settings = small_engine.settings
    small_engine.close()
    d = Daemon(settings, watch=False, idle_minutes=30, preload=True)  # as `serve` starts it
    await d.start()
    try:
        await asyncio.sleep(2.0)
        snapshot = d.jobs.snapshot()
        assert snapshot["running"] is None and not snapshot["queued"] and not snapshot["recent"], snapshot
    finally:
        await d.close()


async def test_the_current_repository_goes_before_the_rest_of_another_ones_embed_job(
    small_engine: Engine, tmp_path: Path
) -> None:
    big = tmp_path / "big"
    small_engine.add_collection(many_small_chunks(big), "big")
    small = indexed(small_engine, tmp_path / "small", {"m.py": "def small_one():\n    return 1\n"})
    small_engine.update(["big"], progress=False)
    current: list[str | None] = ["big"]
    queue = JobQueue(small_engine, auto_embed=False, embed_hint=lambda: EmbedHint(current[0]))
    try:
        big_job = await running_embed(queue, ["big"])  # qmd-warm's job for the repository of the session
        current[0] = small  # then a search in another repository finds its chunks waiting
        small_job = queue.submit("embed", None)  # what the daemon asks for then (_resume_embedding)
        for _ in range(6000):  # a ceiling
            if _pending(small_engine.settings, small) == 0 or big_job.done.is_set():
                break
            await asyncio.sleep(0.05)
        assert _pending(small_engine.settings, small) == 0
        assert _pending(small_engine.settings, "big") > 0, "the other repository's whole job went first"
        assert await small_job.wait(600) and await big_job.wait(600)
        assert big_job.state == small_job.state == "done" and big_job.result["pending"] == 0
    finally:
        assert await queue.close()
