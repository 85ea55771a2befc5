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

import pytest
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
    assert waiting_line(str(tmp_path), 5, refresh=False, collection=False, daemon=False) == (
        "waiting for the search to finish"
    )
    # no refresh asked and no daemon answering /health yet: the one the call started is starting
    assert waiting_line(str(tmp_path), 5, refresh=False, collection=False, daemon=True) == (
        "waiting for the daemon to start (it loads its models first)"
    )


def _searching(detail: str) -> str:
    return f"the daemon is running the search ({detail})"


async def test_with_the_writer_idle_the_notice_says_what_the_search_is_doing(
    small_engine: Engine, tmp_path: Path
) -> None:
    """No job running: the notice said "waiting for the daemon's answer (0 jobs queued; ...)".
    It now says what /health reports the search costs: its models' first load, reranking on the
    device, nothing at all. Real daemon and models (small profile), loaded step by step here."""
    root = str(tmp_path)
    daemon = Daemon(small_engine.settings, watch=False, idle_minutes=30)  # preload off: nothing built yet
    await daemon.start()
    try:
        assert daemon.jobs.activity()["running"] is None
        ask = {"refresh": False, "collection": False, "daemon": True}
        line = await asyncio.to_thread(lambda: waiting_line(root, 60, **ask, rerank=True))
        assert line == _searching("loading its models for the first query; reranking the top results")

        await daemon._read(lambda: daemon.reader.models.embedder())  # built, its file not loaded yet
        line = await asyncio.to_thread(daemon_doing, root, 60, refresh=False, rerank=True)
        activity = daemon._models_activity()
        assert activity is not None
        rerank = "reranking the top results" + (
            " on the CPU (seconds; leave out --rerank to skip it)" if activity["device"] == "cpu" else ""
        )
        assert line == _searching(
            f"loading the embedding model for its first query; loading the reranking model for its first "
            f"query; {rerank}"
        )

        await daemon._read(lambda: daemon.reader.models.embedder().embed_query("warm up"))
        line = await asyncio.to_thread(daemon_doing, root, 60, refresh=True, rerank=False)
        assert line == _searching("no indexing or embedding holds it up")  # the refresh asked is done
        assert "jobs queued" not in line
    finally:
        await daemon.close()


def test_a_job_running_beside_the_search_is_named_not_called_nothing() -> None:
    """A first search in a new repository: its refresh done, the embed job it asked for runs, and
    the notice said "no indexing or embedding holds it up" while the two shared the cores."""
    from clients.ai_search import searching_line

    models = {"device": "cpu", "roles": {"embed": "loaded"}}
    beside = (("embed", "an embedding batch runs beside it"), ("refresh", "a refresh runs beside it"))
    for kind, said in beside:
        health = {"jobs": {"running": {"kind": kind}, "queued": 0}, "searches": 1, "models": models}
        assert searching_line(health, rerank=False) == _searching(said)
    idle = {"jobs": {"running": None, "queued": 0}, "searches": 1, "models": models}
    assert searching_line(idle, rerank=False) == _searching("no indexing or embedding holds it up")


async def test_the_notice_counts_the_other_searches_the_daemon_answers(
    engine: Engine, tmp_path: Path
) -> None:
    """Two real searches held on a refresh (the writer lock held by another process): the notice
    of one of them says the daemon answers one other; /health counts /search requests in flight,
    the asking call's own among them. No model is built yet (no search has run): it says so."""
    import clients._qmd_client as qc

    tree = write_tree(tmp_path / "tree", {"a.py": "def walrus():\n    return 1\n"})
    engine.add_collection(tree, "tree")
    with lock_held_elsewhere(writer_lock_path(engine.settings.index_path)):
        daemon = Daemon(engine.settings, watch=False, idle_minutes=30)
        await daemon.start()
        state = qc.read_state()
        assert state is not None
        body = {"query": "walrus", "collections": ["tree"], "refresh": True, "wait": 60}
        held = [asyncio.create_task(asyncio.to_thread(qc.http, state, "POST", "/search", body, 90))
                for _ in range(2)]
        try:
            for _ in range(600):  # a ceiling
                if daemon._searches == 2:
                    break
                await asyncio.sleep(0.05)
            line = await asyncio.to_thread(daemon_doing, str(tree), 60, refresh=False)
            # the refresh the two asked runs (held on the lock), beside a call that waits for none
            expected = ("1 other search at the same time; loading its models for the first query; "
                        "a refresh runs beside it")
            assert line == _searching(expected)
        finally:
            daemon.jobs.engine.stop_waiting.set()  # the refresh queued on the held lock gives up
            await asyncio.gather(*held, return_exceptions=True)
            await daemon.close()


async def test_a_long_first_index_shows_how_many_files_are_read(engine: Engine, tmp_path: Path) -> None:
    """A first index of sympy (33k chunks, 13 s) printed its notice at 3 s and then nothing: the
    notice now counts the files the daemon's refresh has read of all, from /health's running job
    (its `progress`), and the counts grow while it reads."""
    files = {f"pkg{i // 100}/m{i}.py": f"def function_{i}(value):\n    return value + {i}\n"
             for i in range(3000)}
    tree = write_tree(tmp_path / "tree", files)
    engine.add_collection(tree, "tree")
    daemon = Daemon(engine.settings, watch=False, idle_minutes=30)
    await daemon.start()
    try:
        job = daemon.jobs.submit("refresh", ["tree"], reason="new")
        lines: list[str] = []
        while not job.done.is_set():
            line = await asyncio.to_thread(daemon_doing, str(tree), 60)
            if line and " of 3,000 files read" in line and line not in lines:
                lines.append(line)
        assert await job.wait(600) and job.state == "done", job.error
        assert lines, "no line counted the files while the first index read them"
        assert lines[0].startswith(f"the daemon is indexing {tree} for the first time (")
        assert lines[0].endswith(" of 3,000 files read; results come within about 60 s, --wait changes it)")
        done = [int(line.split("time (")[1].split(" of ")[0].replace(",", "")) for line in lines]
        assert done == sorted(done) and done[-1] <= 3000
    finally:
        await daemon.close()


def test_a_slow_call_repeats_its_notice_only_when_it_says_something_new(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Progress every `every` seconds while the call waits; the same line is not printed twice,
    and nothing is printed once the call is over (SlowNotice's property, kept)."""
    import time

    from clients.ai_search import SlowNotice

    said = iter(["10 of 30 files read", "10 of 30 files read", "20 of 30 files read"])
    notice = SlowNotice(0, lambda: next(said, "30 of 30 files read"), every=0.05)
    err = ""
    with notice:
        deadline = time.monotonic() + 10
        while "30 of 30" not in err and time.monotonic() < deadline:
            time.sleep(0.01)
            err += capsys.readouterr().err
    assert notice.join(10)
    err += capsys.readouterr().err
    said_once = ["10 of 30 files read", "20 of 30 files read", "30 of 30 files read"]
    assert err == "".join(f"ai-search: {line}\n" for line in said_once)
