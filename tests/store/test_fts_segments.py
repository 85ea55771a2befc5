"""FTS5's segments pile up, one a write transaction; they are merged a bounded step at a time (each
writing update one, the daemon more while idle), never all at once by an edit's update, and search
answers the same, to the score. Real indexes of this repository's own code in temp homes."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from qmd_daemon.daemon import jobs
from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings
from qmd_daemon.store import index_store

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("search", "store", "text")  # a fourth segment would be automerged
QUESTIONS = ("how are bm25 weights chosen", "FTS5 segments merged", "term_stats", "chunk the text of a file")


@pytest.fixture
def trees(tmp_path: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(REPO / "qmd_daemon" / package, tmp_path / "trees" / package)
    return tmp_path / "trees"


@pytest.fixture
def piled(tmp_path: Path, trees: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    """An engine whose index holds one segment per package (each its own collection, so a write
    transaction each, with merging off while they were built)."""
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(index_store, "MAX_FTS_SEGMENTS", 10**6)
    engine = Engine(Settings.from_env())
    try:
        for package in PACKAGES:
            engine.add_collection(trees / package, package)
            engine.update([package], progress=False)
        yield engine
    finally:
        engine.close()


def _hits(engine: Engine) -> list[object]:
    return [[(h.collection, h.path, h.line, h.score) for h in engine.search(q, None)] for q in QUESTIONS]


def _fts_data(engine: Engine) -> list[tuple[int, bytes]]:
    """FTS5's whole index as stored (its %_data rows): any merge work changes it."""
    return engine.store.conn.execute("SELECT id, block FROM chunks_fts_data ORDER BY id").fetchall()  # type: ignore[attr-defined]


def _edit(trees: Path, n: int) -> None:
    with (trees / "search" / "lexical.py").open("a", encoding="utf-8") as f:
        f.write(f"\n\ndef segments_test_edit_{n}():\n    return {n}\n")


def test_an_update_merges_a_bounded_step_and_the_steps_end_in_one_segment(
    piled: Engine, trees: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hits = _hits(piled)
    assert piled.store.fts_segments() == len(PACKAGES), "each collection's update wrote its own segment"
    monkeypatch.setattr(index_store, "MAX_FTS_SEGMENTS", 2)
    monkeypatch.setattr(index_store, "FTS_MERGE_PAGES", 2, raising=False)
    _edit(trees, 1)
    piled.update(["search"], progress=False)
    # 'optimize' left one segment; a step of 2 pages leaves the merge under way: its output
    # segment beside what is left of its inputs, and the update's own segment
    assert piled.store.fts_segments() > 2
    steps = 1
    while piled.merge_step():
        steps += 1
    assert steps > 2, "the merge took more than one bounded step"
    assert piled.store.fts_segments() == 1
    monkeypatch.setattr(index_store, "MAX_FTS_SEGMENTS", 10)
    _edit(trees, 2)
    piled.update(["search"], progress=False)
    written = piled.store.fts_segments()
    assert 1 < written < 10
    assert not piled.merge_step(), "below MAX_FTS_SEGMENTS no merge begins"
    assert piled.store.fts_segments() == written
    monkeypatch.setattr(index_store, "FTS_MERGE_PAGES", 1000)
    shutil.copyfile(REPO / "qmd_daemon" / "search" / "lexical.py", trees / "search" / "lexical.py")
    piled.update(["search"], progress=False)
    assert _hits(piled) == hits and all(hits)


def test_an_update_that_writes_nothing_does_no_merge_work(
    piled: Engine, trees: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_store, "MAX_FTS_SEGMENTS", 2)  # 3 segments: a merge is due
    before = _fts_data(piled)
    reports = piled.update(progress=False)
    assert all(r.chunks_added == r.chunks_removed == 0 for r in reports)
    assert _fts_data(piled) == before


async def test_the_daemon_merges_while_idle_and_again_after_a_refresh(
    piled: Engine, trees: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_store, "MAX_FTS_SEGMENTS", 2)  # 3 segments: a merge is due
    monkeypatch.setattr(index_store, "FTS_MERGE_PAGES", 4, raising=False)
    monkeypatch.setattr(jobs, "IDLE_MERGE_SECONDS", 0.2, raising=False)
    reader = Engine(piled.settings)  # its own connection: the queue's writer thread uses piled's

    async def merged() -> bool:
        deadline = time.monotonic() + 60
        while reader.store.fts_segments() > 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        return reader.store.fts_segments() == 1

    queue = jobs.JobQueue(piled, auto_embed=False)
    queue.start()
    try:
        assert await merged(), "merged with no job asked"
        _edit(trees, 1)
        job = queue.submit("refresh", ["search"])
        assert await job.wait(30) and job.state == "done", job.error
        assert [r["chunks_added"] for r in job.result["reports"]] == [1]
        assert await merged()
    finally:
        assert await queue.close()
        reader.close()


def test_an_update_that_changes_many_files_writes_few_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FTS5 writes its pending rows out as a segment whenever a write goes back in rowid order: an
    # update that deleted and inserted each changed file's rows in turn made one segment per file
    # (20 edited files, 14 segments); held back and sorted (store/fts_batch.py), at most two.
    tree = tmp_path / "tree"
    shutil.copytree(REPO / "qmd_daemon" / "search", tree)
    monkeypatch.setattr(index_store, "MAX_FTS_SEGMENTS", 10**6)
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "home"))
    engine = Engine(Settings.from_env())
    try:
        engine.add_collection(tree, "search")
        engine.update(["search"], progress=False)
        before = engine.store.fts_segments()
        edited = [path for path in sorted(tree.glob("*.py")) if path.name != "hit.py"][:15]
        for i, path in enumerate(edited):
            path.write_text(path.read_text() + f"\n\ndef appended_function_{i}():\n    return {i}\n")
        (tree / "hit.py").unlink()
        engine.update(["search"], progress=False)
        assert len(edited) == 15
        assert engine.store.fts_segments() - before <= 2
        hits = engine.search("appended_function_7", None)
        assert hits and hits[0].path.endswith(edited[7].name)
    finally:
        engine.close()


def test_a_big_first_index_holds_a_bounded_amount_of_row_text(
    tmp_path: Path, trees: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one transaction indexes a whole repository: its FTS rows are written out as the bound is
    # passed, not all held in memory until the commit
    from qmd_daemon.store import fts_batch

    monkeypatch.setattr(fts_batch, "MAX_HELD_BYTES", 20_000)
    held: list[int] = []
    flush = fts_batch.FtsBatch.flush

    def recording(self: fts_batch.FtsBatch) -> None:
        held.append(sum(len(c) for _, row in self._inserts.values() for c in row))
        flush(self)

    monkeypatch.setattr(fts_batch.FtsBatch, "flush", recording)
    monkeypatch.setenv("QMD_DAEMON_HOME", str(tmp_path / "home"))
    engine = Engine(Settings.from_env())
    try:
        engine.add_collection(trees / "store", "store")
        engine.update(["store"], progress=False)
        largest = engine.store.conn.execute(  # type: ignore[attr-defined]
            "SELECT max(length(collection) + length(path) + length(symbols) + length(body)) FROM chunks_fts"
        ).fetchone()[0]
        assert len([h for h in held if h]) > 5 and max(held) <= 20_000 + largest
        assert engine.search("FtsBatch", None)[0].path.endswith("fts_batch.py")
    finally:
        engine.close()
