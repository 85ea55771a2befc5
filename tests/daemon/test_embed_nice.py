"""The daemon's background embedding runs at a lowered CPU priority, and searches do not.

On a 2-core box the embed job competed at full priority with the user's build for the whole first
index (bench/embed_nice.py). The job now runs on a thread of its own, niced (daemon/priority.py),
with its own model instance, so a search's query is neither niced nor held on the model lock by a
slowed decode. Real engine, real MiniLM (small profile), real job queue; niceness read from /proc.
Linux only: elsewhere the priority is left alone (docs/scale.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bench.embed_nice import tasks as threads  # tid -> (nice, CPU ticks), read from /proc
from qmd_daemon import vectorize
from qmd_daemon.daemon import jobs, priority
from qmd_daemon.daemon.jobs import LOWERED_FROM, Job, JobQueue
from qmd_daemon.engine import Engine
from qmd_daemon.models.embedder import Embedder
from qmd_daemon.settings import Settings
from qmd_daemon.text.chunk_model import embedding_text
from qmd_daemon.vectorize import BATCH, EmbedHint
from tests.daemon.support import many_small_chunks, running_embed

# the test process's own nice value (a suite run under `nice -n 10`): what an un-niced thread has
BASE = os.getpriority(os.PRIO_PROCESS, 0)
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice: Linux")


def engine_at(level: str, monkeypatch: pytest.MonkeyPatch) -> Engine:
    """An Engine on the small_engine fixture's home (its profile and models) reading `level`."""
    monkeypatch.setenv("QMD_EMBED_PRIORITY", level)
    return Engine(Settings.from_env())


def with_tree(engine: Engine, tmp_path: Path, long_chunks: bool) -> None:
    tree = tmp_path / "tree"
    many_small_chunks(tree, 4 * BATCH, lines=16) if long_chunks else many_small_chunks(tree)
    engine.add_collection(tree, "tree")
    engine.update(["tree"], progress=False)


@contextlib.asynccontextmanager
async def queue_at(
    level: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, long_chunks: bool = False,
    embed_hint: Callable[[], EmbedHint] | None = None,
) -> AsyncIterator[tuple[Engine, JobQueue]]:
    """A job queue whose engine reads `level`, with a collection of many batches to embed."""
    engine = engine_at(level, monkeypatch)
    with_tree(engine, tmp_path, long_chunks)
    queue = JobQueue(engine, auto_embed=False, embed_hint=embed_hint)
    try:
        yield engine, queue
    finally:
        assert await queue.close()
        engine.close()


async def niced_while_embedding(queue: JobQueue) -> set[int]:
    """The threads at a nice value above the process's seen while the queue's embed job computes."""
    embed = await running_embed(queue, ["tree"])
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    while not embed.done.is_set() and time.monotonic() < deadline:
        seen |= {tid for tid, (nice, _) in threads().items() if nice > BASE}
        if len(seen) >= 2:  # the job's thread and llama.cpp's worker it made
            break
        await asyncio.sleep(0.05)
    return seen


async def test_the_embed_job_computes_niced_and_leaves_the_writer_and_searches_alone(
    small_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with queue_at("19", tmp_path, monkeypatch) as (engine, queue):
        writer = queue._executor.submit(threading.get_native_id).result()
        niced = await niced_while_embedding(queue)
        # the job's own thread and the worker llama.cpp made from it (2 threads: QMD_THREADS
        # default min(4, cores); one thread alone on a 1-core machine)
        assert len(niced) >= min(2, os.cpu_count() or 1), niced
        assert all(threads().get(tid, (19, 0))[0] == 19 for tid in niced)
        assert writer not in niced and threads()[writer][0] == BASE, "the writer thread was niced"
        assert queue.activity()["embed_priority"] == "nice 19"
        queue.submit("embed", ["tree"])  # the rest, at once: the job above stopped early or not
        while not queue.idle:
            await asyncio.sleep(0.1)
        assert threads()[writer][0] == BASE, "the niced priority stuck to the writer thread"
        assert engine.status()["vectors"]["pending"] == 0
        # a search's query embedding: computed on this thread's own workers, none of them niced
        embedder = engine.models.embedder()
        assert embedder is not None
        embedder.embed_query("warm this thread's workers")
        before = threads()
        for i in range(5):
            embedder.embed_query(f"where is query {i} parsed " * 8)
        after = threads()
        working = {tid for tid, (_n, ticks) in after.items() if ticks > before.get(tid, (0, 0))[1]}
        assert working and all(after[tid][0] == BASE for tid in working), (working, after)


async def test_a_query_does_not_wait_for_the_background_runs_model(
    small_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nice 19 on the shared model: a query waited 26 s behind one slowed decode (bench/embed_nice.py)
    async with queue_at("19", tmp_path, monkeypatch) as (engine, queue):
        embed = await running_embed(queue, ["tree"])
        twin = await second_instance(engine, embed)
        assert twin is not None, "the job ended before its second instance was seen"
        embedder = engine.models.embedder()
        assert embedder is not None and twin is not embedder
        with twin.handle._lock:  # a background decode that a busy machine holds up
            started = time.perf_counter()
            vector = await asyncio.to_thread(embedder.embed_query, "how is the index searched")
            assert len(vector) == embedder.dim and time.perf_counter() - started < 30


async def test_off_embeds_at_the_normal_priority_on_the_shared_model(
    small_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Looked at during the deep pass, from the thread computing it (vectorize asks the hint before
    # each window): a look after the job (192 small chunks: seconds on a fast machine) saw no
    # second instance and no niced thread whatever the level did.
    seen: list[tuple[int, bool]] = []  # (that thread's nice, a second instance in use), each window
    engines: list[Engine] = []

    def hint() -> EmbedHint:
        if threading.current_thread() is not threading.main_thread():
            nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            seen.append((nice, engines[0].background_embedder is not None))
        return EmbedHint()

    async with queue_at("off", tmp_path, monkeypatch, embed_hint=hint) as (engine, queue):
        engines.append(engine)
        embed = await running_embed(queue, ["tree"])
        assert not await niced_for(3.0)
        assert await embed.wait(300) and embed.result["pending"] == 0, embed.result
        assert seen and all(s == (BASE, False) for s in seen), seen
        assert queue.activity()["embed_priority"] == "off" and engine.background_embedder is None


async def test_an_edits_few_chunks_embed_at_once_on_the_shared_model(
    small_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a second instance costs its context's memory (a decoder's: hundreds of MB) and a load: only
    # a long run (LOWERED_FROM chunks waiting) is worth it; an edit's chunks are seconds of work
    engine = engine_at("19", monkeypatch)
    tree = tmp_path / "small"
    tree.mkdir()
    (tree / "one.py").write_text("def only_function():\n    return 1\n", encoding="utf-8")
    engine.add_collection(tree, "small")
    engine.update(["small"], progress=False)
    queue = JobQueue(engine, auto_embed=False)
    try:
        assert 0 < (engine.pending_vectors(["small"]) or 0) < LOWERED_FROM
        await (await running_embed(queue, ["small"])).done.wait()
        assert queue.activity()["embed_priority"] == "off" and engine.pending_vectors(["small"]) == 0
    finally:
        assert await queue.close()
        engine.close()


async def test_the_second_instance_is_freed_when_the_run_ends(
    small_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with queue_at("19", tmp_path, monkeypatch) as (engine, queue):
        embed = await running_embed(queue, ["tree"])
        twin = await second_instance(engine, embed)
        await embed.done.wait()
        assert twin is not None and not twin.handle.loaded and engine.background_embedder is None


async def second_instance(engine: Engine, embed: Job, loaded: bool = False) -> Embedder | None:
    """The embed job's second model instance once it exists (and is `loaded`), or None when the
    job ended first: a wait without the job's end looped forever on a fast machine."""
    while not embed.done.is_set():
        twin = engine.background_embedder
        if twin is not None and (twin.handle.loaded or not loaded):
            return twin
        await asyncio.sleep(0.05)
    return None


async def niced_for(seconds: float) -> set[int]:
    """The threads seen at a nice value above the process's within `seconds`."""
    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen |= {tid for tid, (nice, _) in threads().items() if nice > BASE}
        await asyncio.sleep(0.05)
    return seen


def test_levels_are_read_and_a_bad_one_keeps_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    levels = [priority.parse_level(t) for t in ("off", "0", "IDLE", "19", " 7 ")]
    assert levels == ["off", "off", "idle", "19", "7"]
    assert [priority.parse_level(t) for t in ("20", "-5", "low", "")] == [None, None, None, None]
    monkeypatch.setenv("QMD_EMBED_PRIORITY", "lowest")
    from qmd_daemon.daemon.jobs import _configured_level

    assert _configured_level(Settings.from_env().embed_priority) == "19"
    monkeypatch.delenv("QMD_EMBED_PRIORITY")
    assert _configured_level(Settings.from_env().embed_priority) == "19", "nice 19 by default"


def test_a_level_lowers_only_the_thread_that_asks() -> None:
    seen: dict[str, object] = {}

    def work() -> str:
        seen["tid"] = threading.get_native_id()
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return "done"

    assert priority.run_lowered("idle", work, lambda applied: seen.update(applied=applied)) == "done"
    assert seen["applied"] == "idle" and seen["tid"] != threading.get_native_id()
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == BASE
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    with pytest.raises(ValueError, match="raised there"):
        priority.run_lowered("5", lambda: (_ for _ in ()).throw(ValueError("raised there")))


def cosine(a: list[float], b: list[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms


async def test_a_queued_refresh_stops_the_niced_batch_mid_decode_and_the_job_finishes_after(
    small_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A refresh (an edit's) ran only after the niced job's current batch: on a busy machine a
    # niced batch took 5.7-40 s, and the edit's search waited for it (docs/scale.md). Now the queued
    # refresh sets the job's abort flag, and the second instance's decode stops mid-graph.
    # One batch of 512 chunks here (a real size knob, not a mock: the whole tree of 64 long chunks
    # in one batch, seconds of MiniLM), so "after the batch" and "at once" are far apart on any
    # machine; LOWERED_FROM (another size knob) under 64 keeps the job on the niced instance.
    monkeypatch.setattr(vectorize, "BATCH", 512)
    monkeypatch.setattr(vectorize, "WINDOW", 512)
    monkeypatch.setattr(jobs, "LOWERED_FROM", 3 * BATCH)  # the niced instance for 4 x BATCH long chunks
    async with queue_at("19", tmp_path, monkeypatch, long_chunks=True) as (engine, queue):
        shared = engine.models.embedder()
        assert shared is not None
        embed = await running_embed(queue, ["tree"])
        twin = await second_instance(engine, embed, loaded=True)
        assert twin is not None and twin.handle.loaded, "the job ended before its second instance was seen"
        assert twin.handle.abort is not None
        assert shared.handle.abort is None, "the shared model (searches') is never stopped"
        await asyncio.sleep(1.0)  # inside the first (and only) batch's decodes
        edited = tmp_path / "tree" / "edited_now.py"
        edited.write_text("def edited_just_now():\n    return 1\n", encoding="utf-8")
        started = time.perf_counter()
        refresh = queue.submit("refresh", ["tree"])
        await refresh.done.wait()
        waited = time.perf_counter() - started
        assert refresh.state == "done" and refresh.result["reports"][0]["touched"]
        await embed.done.wait()
        result = embed.result
        # the refresh went first: far sooner than the batch it cut (every chunk of the tree) would
        # have ended; without the abort it waited for nearly the whole job
        assert waited < min(5.0, result["seconds"] / 4), (waited, result)
        assert embed.state == "done" and result["aborted"] >= 1 and result["pending"] == 0, result
        # every chunk, the edited file's too, has the vector the shared model gives its text
        rows = engine.store.chunks_by_ids(list(range(1, 5000)))
        stored = engine.vectors.vectors_of(list(rows)) if engine.vectors is not None else {}
        assert len(stored) == len(rows) >= jobs.LOWERED_FROM
        sample = sorted(rows)[:: max(1, len(rows) // 24)] + [max(rows)]
        texts = [embedding_text(r.path, r.heading, r.signature, r.text) for r in (rows[c] for c in sample)]
        expected = shared.embed_documents(texts)
        assert min(cosine(stored[c], v) for c, v in zip(sample, expected, strict=True)) > 0.999
        assert any(rows[c].path.endswith("edited_now.py") for c in sample)
