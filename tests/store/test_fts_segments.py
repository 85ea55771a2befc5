"""FTS5's segments pile up, one a write transaction; a collection's update merges them into one
past MAX_FTS_SEGMENTS, and search answers the same, to the score. Real indexes of this
repository's own code, built twice in temp homes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.settings import Settings
from qmd_daemon.store import index_store

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("search", "store", "text")  # a fourth segment would be automerged
QUESTIONS = ("how are bm25 weights chosen", "FTS5 segments merged", "term_stats", "chunk the text of a file")


def _build(home: Path, trees: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list[object]]:
    """Index each package as its own collection (a write transaction each): the FTS5 segments
    after the last update, and the hits of QUESTIONS."""
    monkeypatch.setenv("QMD_DAEMON_HOME", str(home))
    engine = Engine(Settings.from_env())
    try:
        for package in PACKAGES:
            engine.add_collection(trees / package, package)
            engine.update([package], progress=False)
        hits = [[(h.collection, h.path, h.line, h.score) for h in engine.search(q, None)] for q in QUESTIONS]
        return engine.store.fts_segments(), hits
    finally:
        engine.close()


def test_piled_up_segments_are_merged_and_search_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for package in PACKAGES:
        shutil.copytree(REPO / "qmd_daemon" / package, tmp_path / "trees" / package)
    monkeypatch.setattr(index_store, "MAX_FTS_SEGMENTS", 10**6)
    piled, hits = _build(tmp_path / "piled", tmp_path / "trees", monkeypatch)
    monkeypatch.setattr(index_store, "MAX_FTS_SEGMENTS", 2)
    merged, merged_hits = _build(tmp_path / "merged", tmp_path / "trees", monkeypatch)
    assert piled > 2, "each collection's update wrote its own segment"
    assert merged == 1
    assert merged_hits == hits and all(hits)


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
