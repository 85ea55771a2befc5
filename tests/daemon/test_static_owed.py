"""A static pass the daemon's embed job could not run is owed, not dropped.

Two ways it was skipped silently, leaving the static tier partial until the next edit's refresh
asked for another embed job: another process (a terminal's `qmd-daemon embed`) held static.lock,
so the job's static pass returned `busy` and nothing tried again; and with `models: {deep: off}`,
a static pass that stopped for a refresh queued behind it reported `pending: 0` (the deep count),
so the job was not put back behind that refresh. Real engine, real MiniLM (small profile), real
job queue, the lock held by another process.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from qmd_daemon.config import IndexConfig
from qmd_daemon.daemon import jobs
from qmd_daemon.daemon.jobs import JobQueue
from qmd_daemon.engine import Engine
from qmd_daemon.static_vectorize import BATCH
from tests.conftest import write_tree
from tests.daemon.support import lock_held_elsewhere

REPO = Path(__file__).resolve().parents[2]



def _static(engine: Engine) -> tuple[int, int]:
    status = engine.static_status()
    assert status["available"], status
    return status["vectors"], status["chunks"]


async def _settled(queue: JobQueue, seconds: float = 300) -> None:
    for _ in range(int(seconds * 10)):  # a ceiling: a loaded 2-core box
        if queue.snapshot()["embed_retry"] is None and queue.idle:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the owed pass never ran: {queue.snapshot()}")


async def test_a_static_pass_skipped_for_another_process_runs_once_it_lets_go(
    small_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "EMBED_RECHECK_SECONDS", 0.2)  # the real lock, tried more often
    tree = write_tree(tmp_path / "tree", {"a.py": "def walrus():\n    return 1\n", "b.py": "X = 2\n"})
    small_engine.add_collection(tree, "tree")
    small_engine.update(["tree"], progress=False)
    queue = JobQueue(small_engine, auto_embed=False)
    queue.start()
    try:
        with lock_held_elsewhere(small_engine.static_lock_path) as holder:
            job = queue.submit("embed", ["tree"])
            assert await job.wait(120) and job.state == "done", job.error  # a ceiling
            assert job.result["static"]["busy"] and job.result["static"]["held_by"] == holder.pid
            await asyncio.sleep(0.6)  # tries of the locks, all while the static one is held
            owed = queue.snapshot()["embed_retry"]
            assert owed is not None and owed["passes"] == ["static"] and owed["waiting_for_pid"] == holder.pid
            covered, chunks = _static(small_engine)
            assert covered == 0 < chunks
        await _settled(queue)  # the other process let go
        assert _static(small_engine) == (chunks, chunks)
    finally:
        assert await queue.close()


async def test_a_static_pass_that_stopped_for_a_refresh_resumes_after_it_with_deep_off(
    small_engine: Engine, tmp_path: Path
) -> None:
    with IndexConfig.editing(small_engine.settings.config_file) as config:
        config.set_models({"profile": "small", "deep": "off"})
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "qmd_daemon", tree)  # more chunks than one static batch
    small_engine.add_collection(tree, "tree")
    small_engine.update(["tree"], progress=False)
    assert _static(small_engine)[1] > BATCH
    queue = JobQueue(small_engine, auto_embed=False)
    queue.start()
    try:
        embed = queue.submit("embed", ["tree"])
        refresh = queue.submit("refresh", ["tree"])  # waiting: the static pass stops after a batch
        assert await refresh.wait(300) and refresh.state == "done", refresh.error  # a ceiling
        assert await embed.wait(300) and embed.state == "done", embed.error
        # it went back in the queue behind the refresh and finished the pass
        assert embed.finished_at is not None and refresh.finished_at is not None
        assert embed.finished_at >= refresh.finished_at
        assert embed.result["static"]["pending"] == 0
        covered, chunks = _static(small_engine)
        assert covered == chunks
    finally:
        assert await queue.close()
