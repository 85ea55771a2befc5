"""The daemon's embed job across collections: the collection of the most recent request first.

A refresh of the repository the user works in, queued while another repository's long embed job
runs, still goes first (the job yields, test_embed_yields.py); the embed job the refresh then asks
for joins the waiting one, and that job embeds the current repository's chunks before the rest of
the other's. Real engine, real MiniLM (small profile), real job queue.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from qmd_daemon.daemon.jobs import JobQueue
from qmd_daemon.engine import Engine
from qmd_daemon.vectorize import EmbedHint
from tests.conftest import write_tree
from tests.daemon.support import many_small_chunks, running_embed


async def test_the_current_repository_is_embedded_before_the_rest_of_a_running_job(
    small_engine: Engine, tmp_path: Path
) -> None:
    big = tmp_path / "big"
    small_engine.add_collection(many_small_chunks(big), "big")
    files = {f"m{i}.py": f"def small_{i}():\n    return {i}\n" for i in range(5)}
    small = write_tree(tmp_path / "small", files)
    small_engine.add_collection(small, "small")
    small_engine.update(["big", "small"], progress=False)
    ids = {name: small_engine.collection_ids([name]) for name in ("big", "small")}

    current: list[str | None] = [None]
    seen: list[tuple[int, int]] = []  # (big, small) pending as each window of the job starts
    small_done = threading.Event()

    def hint() -> EmbedHint:  # on the writer thread, between windows: the engine is free there
        vectors = small_engine.vectors
        assert vectors is not None
        pending = tuple(vectors.pending_count(ids[name]) for name in ("big", "small"))
        seen.append((pending[0], pending[1]))
        if pending[1] == 0:
            small_done.set()
        return EmbedHint(current=current[0])

    queue = JobQueue(small_engine, embed_hint=hint)
    try:
        embed = await running_embed(queue, ["big"])
        current[0] = "small"  # a request from the small repository, with an edit
        (small / "m0.py").write_text("def small_zero_edited():\n    return 0\n")
        refresh = queue.submit("refresh", ["small"])
        assert await refresh.wait(120) and refresh.state == "done", refresh.error
        for _ in range(6000):  # 60 s ceiling; the event comes from the writer thread
            if small_done.is_set():
                break
            await asyncio.sleep(0.01)
        assert small_done.is_set(), seen
        assert seen[-1][0] > 0, f"the small repository waited for the big one: {seen}"
        # the refresh's embed job (every collection waiting: first-hour walk) joined the waiting one
        assert embed.names is None, embed.names
    finally:
        assert await queue.close(timeout=300)
