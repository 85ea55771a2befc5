"""The daemon's embed job gives the writer to a refresh queued behind it.

Walked on a fresh install (first-hour-9): the first search of a new repository starts a refresh and
then an embed job for every chunk (833 chunks of cobra took 235 s on a loaded 2-core box); a file
edited meanwhile waited behind the whole embed job, so `ai-search` waited its 60 s and answered
without the edit. Real engine, real MiniLM (small profile), real job queue.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from qmd_daemon.daemon.jobs import JobQueue
from qmd_daemon.engine import Engine
from qmd_daemon.vectorize import BATCH
from tests.daemon.support import many_small_chunks, running_embed

REPO = Path(__file__).resolve().parents[2]


async def test_a_refresh_queued_behind_a_long_embed_job_runs_before_that_job_ends(
    small_engine: Engine, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    small_engine.add_collection(many_small_chunks(tree), "tree")
    small_engine.update(["tree"], progress=False)
    total = sum(c["chunks"] for c in small_engine.status()["collections"])
    assert total > 100

    queue = JobQueue(small_engine, auto_embed=False)
    try:
        embed = await running_embed(queue, ["tree"])
        (tree / "pkg" / "part_000.py").write_text("def zebraquokka_validator():\n    return 2\n")
        refresh = queue.submit("refresh", ["tree"])

        assert await refresh.wait(120) and refresh.state == "done", refresh.error
        assert not embed.done.is_set(), "the refresh waited for every chunk's vector"
        assert [r["changed"] for r in refresh.result["reports"]] == [1]

        assert await embed.wait(600) and embed.state == "done", embed.error
        assert embed.result["pending"] == 0 == small_engine.status()["vectors"]["pending"]
        # the job's static pass (before the deep one, every slice) left no chunk without a static vector
        static = small_engine.status()["static_vectors"]
        assert embed.result["static"]["pending"] == 0 and static["vectors"] == static["chunks"] > 0
        # the result counts every slice of the job, not the last one only
        assert embed.result["embedded"] > 2 * BATCH
    finally:
        assert await queue.close()


async def test_the_daemon_closing_stops_an_embed_job_within_its_batch(
    small_engine: Engine, tmp_path: Path
) -> None:
    # `qmd-daemon stop` during a repository's first embedding took 11 s: close() waited its whole
    # timeout for the job, then left the batch running to be rolled back
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "qmd_daemon" / "search", tree)
    small_engine.add_collection(tree, "tree")
    small_engine.update(["tree"], progress=False)
    queue = JobQueue(small_engine, auto_embed=False)
    embed = await running_embed(queue, ["tree"])
    assert await queue.close(timeout=300)
    assert embed.state == "done" and embed.result["pending"] > 0, embed.result
    # the batch under way, not the collection; at the default priority (nice 19, a second model
    # instance) close() stops that batch mid-decode, keeping the chunks it finished (maybe none yet)
    assert embed.result["embedded"] < BATCH * 3
