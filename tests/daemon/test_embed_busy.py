"""The daemon's embed job while a terminal's `qmd-daemon embed` holds the embedding lock: it failed
(daemon.log said `embed ... failed`, qmd-warm logged a failure) although the other run embeds the
same chunks. It now skips and says so; `status` names the run embedding now. Once the other run
lets go, the daemon embeds what it left (it used to wait for the next edit). Real engine, real job
queue, the lock held by another process."""

from __future__ import annotations

import asyncio
import logging
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from qmd_daemon.daemon import jobs
from qmd_daemon.daemon.jobs import EmbedRetry, Job, JobQueue
from qmd_daemon.engine import Engine
from qmd_daemon.vectorize import EmbedReport
from tests.conftest import MODELS_DIR, run_cli, write_tree
from tests.daemon.support import lock_held_elsewhere


@pytest.fixture
async def held(small_engine: Engine, tmp_path: Path) -> AsyncIterator[tuple[subprocess.Popen[str], JobQueue]]:
    """A collection with chunks to embed, another process holding the embedding lock (until its
    stdin is closed) and the daemon's job queue on the engine."""
    tree = write_tree(tmp_path / "tree", {"a.py": "def walrus():\n    return 1\n"})
    small_engine.add_collection(tree, "tree")
    small_engine.update(["tree"], progress=False)
    with lock_held_elsewhere(small_engine.embed_lock_path) as holder:
        queue = JobQueue(small_engine, auto_embed=False)
        queue.start()
        try:
            yield holder, queue
        finally:
            assert await queue.close()


async def test_an_embed_job_skips_while_another_process_embeds(
    small_engine: Engine, home: Path, held: tuple[subprocess.Popen[str], JobQueue],
    caplog: pytest.LogCaptureFixture,
) -> None:
    holder, queue = held
    assert small_engine.status()["vectors"]["running"] == holder.pid
    status = run_cli("status", env_home=home, QMD_MODELS_DIR=str(MODELS_DIR), check=True).stdout
    assert f"  embedding now: `qmd-daemon embed` (pid {holder.pid})" in status.splitlines()
    with caplog.at_level(logging.INFO, logger="qmd_daemon.jobs"):
        job = queue.submit("embed", ["tree"])
        assert await job.wait(120)  # a ceiling
    assert job.state == "done", job.error
    why = f"another `embed` is running on this index; it will finish the work (pid {holder.pid})"
    assert job.result["skipped"] == why
    assert "embed ('tree',) skipped in" in caplog.text and why in caplog.text
    assert "retried once it lets go" in caplog.text
    holder.communicate("")
    assert small_engine.status()["vectors"]["running"] is None


async def test_a_skipped_embed_runs_once_the_other_run_lets_go(
    small_engine: Engine, held: tuple[subprocess.Popen[str], JobQueue], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunks a skipped job would have embedded waited for the next edit's refresh: a terminal
    run scoped to another collection, or one that had looked for pending chunks before this
    refresh committed, left them without deep vectors for as long as nobody edited."""
    monkeypatch.setattr(jobs, "EMBED_RECHECK_SECONDS", 0.2)  # the real lock, tried more often
    holder, queue = held
    skipped = queue.submit("embed", ["tree"])
    assert await skipped.wait(120)  # a ceiling
    assert skipped.result["skipped"]
    await asyncio.sleep(1.0)  # five tries of the lock, all while it is held
    owed = queue.snapshot()["embed_retry"]
    assert owed is not None and owed["collections"] == ["tree"] and owed["waiting_for_pid"] == holder.pid
    assert queue.idle and small_engine.status()["vectors"]["embedded"] == 0
    holder.communicate("")  # the other run ends
    for _ in range(1200):  # a ceiling: the retry's embedding on a loaded box
        if queue.snapshot()["embed_retry"] is None and queue.idle:
            break
        await asyncio.sleep(0.1)
    (retried,) = [j for j in queue.snapshot()["recent"] if j["id"] != skipped.id]
    assert retried["kind"] == "embed" and retried["collections"] == ["tree"]
    assert retried["state"] == "done" and not retried["result"].get("skipped")
    assert retried["result"]["embedded"] > 0
    vectors = small_engine.status()["vectors"]
    assert vectors["pending"] == 0 and vectors["embedded"] == vectors["chunks"] > 0


async def test_a_skipped_embed_job_counts_the_chunks_still_waiting(
    small_engine: Engine, held: tuple[subprocess.Popen[str], JobQueue]
) -> None:
    """A skipped job said `pending: 0`, so /status and the clients read that nothing waits; and,
    counted, a skipped job must not be requeued behind a refresh (it would only skip again)."""
    holder, queue = held
    chunks = small_engine.status()["vectors"]["chunks"]
    skipped = queue.submit("embed", ["tree"])
    refresh = queue.submit("refresh", ["tree"])  # queued behind it: the job is not put back behind it
    assert await refresh.wait(120) and refresh.state == "done", refresh.error  # a ceiling
    assert skipped.done.is_set() and skipped.result["skipped"]
    assert skipped.result["pending"] == chunks > 0
    assert skipped.finished_at is not None and refresh.started_at is not None
    assert skipped.finished_at <= refresh.started_at
    # the static pass ran before the deep one was refused: its report stays with the job
    assert skipped.result["static"]["pending"] == 0 and skipped.result["static"]["embedded"] == chunks


def test_an_embed_job_that_ran_pays_what_it_covers() -> None:
    """/status's `embed_retry` names only what no embed job has run for since the skip."""
    owed = EmbedRetry(("a", "b"), holder=7)
    assert not owed.covered_by(("a",)) and owed.names == ("b",)
    assert owed.covered_by(("b", "c"))
    everything = EmbedRetry(None, holder=7)
    assert not everything.covered_by(("a",)) and everything.covered_by(None)


async def test_a_yielded_job_that_finds_the_lock_held_when_it_resumes_is_skipped_not_failed(
    held: tuple[subprocess.Popen[str], JobQueue],
) -> None:
    """An embed job put back behind a refresh (its slice counted in `result`) resumes while a
    terminal's `embed` holds the lock: its slices are summed with the skip's counts, and the skip's
    had no `aborted` (added with the mid-decode stop), so the job failed with KeyError: 'aborted'
    and the retry once the lock is let go was never owed."""
    _holder, queue = held
    job = Job("embed", ("tree",))
    # what its first slice returned (_run: the EmbedReport and its priority) before it yielded
    job.result = {**EmbedReport(embedded=64, aborted=1, seconds=2.0, pending=5).as_dict(), "priority": "19"}
    result = await asyncio.get_running_loop().run_in_executor(None, queue._run, job, None)
    assert result["skipped"]  # the lock is held by the other process
    assert not queue._yielded(job, result)  # finished (skipped), not put back: it would skip again
    assert job.result["embedded"] == 64 and job.result["aborted"] == 1 and job.result["skipped"]
