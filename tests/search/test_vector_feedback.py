"""Rocchio feedback for the vector lists (search/feedback.py): the question's vector moved toward
lexical's first hits', for the static list (static_list) and the deep list (vector_search), on
real files, real SQLite and sqlite-vec and the small profile's MiniLM through llama.cpp."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qmd_daemon.engine import Engine
from qmd_daemon.search.feedback import Feedback, rocchio, unit_rows
from qmd_daemon.search.static_list import static_list
from qmd_daemon.search.vector import vector_search
from tests.test_static_tier import FILES, NEIGHBOURS, _indexed

QUESTION = "print text in red"


def test_rocchio_moves_the_question_toward_the_feedback_and_stays_a_unit_vector() -> None:
    query, hit = np.array([3.0, 0.0, 0.0], dtype=np.float32), np.array([[0.0, 1.0, 0.0]], dtype=np.float32)
    assert np.allclose(rocchio(query, hit[:0], 0.5), [1.0, 0.0, 0.0])  # no feedback: its own direction
    moved = rocchio(query, hit, 0.5)
    assert np.isclose(np.linalg.norm(moved), 1.0)
    assert np.allclose(moved, unit_rows(np.array([[1.0, 0.5, 0.0]], dtype=np.float32))[0])


def test_feedback_by_file_pools_each_of_the_first_files() -> None:
    rows = np.eye(4, dtype=np.float32)  # candidates in lexical's order, of files 7, 7, 9, 8
    files = [7, 7, 9, 8]
    assert np.allclose(Feedback(2).rows(rows, files), rows[:2])  # by chunk: the first two chunks
    pooled = Feedback(2, by_file=True).rows(rows, files)
    assert np.allclose(pooled, [[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])


def _chunk_of(engine: Engine, name: str, path: str) -> int:
    ids = engine.store.chunks_of_files_named([Path(path).stem], engine.collection_ids([name]))
    return next(cid for cid, row in engine.store.chunks_by_ids(ids).items() if row.path == path)


def test_static_feedback_pulls_the_list_toward_lexical_first_chunk(
    small_engine: Engine, tmp_path: Path
) -> None:
    name = _indexed(small_engine, tmp_path / "p", {**FILES, **NEIGHBOURS})
    small_engine.embed_static(small_engine.collection_ids([name]), progress=False)
    tier = small_engine.static_tier()
    assert tier is not None
    pool = _chunk_of(small_engine, name, "net/pool.py")  # lexical's first, say: nothing of colours
    others = [c for c in small_engine.store.chunks_of_files_named(
        [Path(p).stem for p in {**FILES, **NEIGHBOURS}], small_engine.collection_ids([name])) if c != pool]
    candidates = [pool, *others]
    plain = static_list(tier, QUESTION, candidates, 1.0)
    moved = static_list(tier, QUESTION, candidates, 1.0, Feedback(1, 10.0))
    assert plain is not None and moved is not None
    assert plain.chunk_ids[0] != pool and moved.chunk_ids[0] == pool
    assert sorted(moved.chunk_ids) == sorted(plain.chunk_ids), "feedback re-orders, adds nothing"
    still = static_list(tier, QUESTION, candidates, 1.0, Feedback(1, 0.0))
    assert still is not None and still.chunk_ids == plain.chunk_ids
    assert np.allclose(still.scores, plain.scores)


def test_deep_feedback_moves_the_knn_toward_lexical_first_chunk(small_engine: Engine, tmp_path: Path) -> None:
    name = _indexed(small_engine, tmp_path / "p", {**FILES, **NEIGHBOURS})
    small_engine.embed([name])
    vectors, embedder = small_engine.vectors, small_engine.models.embedder()
    assert vectors is not None and embedder is not None
    pool, ids = _chunk_of(small_engine, name, "net/pool.py"), small_engine.collection_ids([name])
    plain = vector_search(vectors, embedder, QUESTION, ids)
    moved = vector_search(vectors, embedder, QUESTION, ids, feedback=Feedback(1, 10.0), lexical_ids=[pool])
    assert plain[0].chunk_id != pool and moved[0].chunk_id == pool
    assert {h.chunk_id for h in moved} == {h.chunk_id for h in plain}  # 12 chunks: k=100 holds all
    unchanged = vector_search(vectors, embedder, QUESTION, ids, feedback=Feedback(1, 0.5), lexical_ids=[])
    assert [h.chunk_id for h in unchanged] == [h.chunk_id for h in plain]


def test_deep_rescore_orders_only_lexical_candidates_by_the_moved_vector(
    small_engine: Engine, tmp_path: Path
) -> None:
    name = _indexed(small_engine, tmp_path / "p", {**FILES, **NEIGHBOURS})
    small_engine.embed([name])
    vectors, embedder = small_engine.vectors, small_engine.models.embedder()
    assert vectors is not None and embedder is not None
    ids = small_engine.collection_ids([name])
    knn = vector_search(vectors, embedder, QUESTION, ids)
    # lexical's candidates are every chunk: re-scored by the question's own vector (weight 0),
    # they come out in the KNN's order
    every = [h.chunk_id for h in reversed(knn)]
    control = vector_search(vectors, embedder, QUESTION, ids, feedback=Feedback(1, 0.0, rescore=True),
                            lexical_ids=every)
    assert [h.chunk_id for h in control] == [h.chunk_id for h in knn]
    pool = _chunk_of(small_engine, name, "net/pool.py")
    few = [pool, *[h.chunk_id for h in knn[:3]]]
    moved = vector_search(vectors, embedder, QUESTION, ids, feedback=Feedback(1, 10.0, rescore=True),
                          lexical_ids=few)
    assert [h.chunk_id for h in moved][0] == pool and sorted(h.chunk_id for h in moved) == sorted(few)
