"""The latency budget: reranking does less rather than run over, with the real small profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchOptions, SearchTrace
from tests.conftest import write_tree

FILES = {f"net/retry_{i}.py": f"def retry_{i}(call):\n    '''Retry the call after a failure, wait {i} s.'''\n"
         f"    return call()\n" for i in range(8)}


@pytest.fixture
def engine(small_engine: Engine, tmp_path: Path) -> Engine:
    name = small_engine.add_collection(write_tree(tmp_path / "p", FILES), "p").name
    small_engine.update([name])
    return small_engine


def _search(engine: Engine, **options) -> tuple[list[str], SearchTrace]:
    trace = SearchTrace()
    opts = SearchOptions(vectors=False, rerank_candidates=8, **options)
    hits = engine.search("retry after a failure", ["p"], limit=8, options=opts, trace=trace)
    return [h.path for h in hits], trace


def test_rerank_runs_in_full_without_budget_and_not_at_all_past_it(engine: Engine) -> None:
    plain, _ = _search(engine)
    _, full = _search(engine, rerank=True, budget_ms=None)
    assert full.reranked == 8 and full.budget_cuts == []
    assert engine.models.reranker().pair_seconds > 0, "the reranker's pace is measured"
    paths, cut = _search(engine, rerank=True, budget_ms=0.001)
    assert cut.reranked == 0 and cut.budget_cuts == ["rerank: 0 of 8 in time"]
    assert paths == plain, "nothing rescored: the fused order stands"


def test_strong_lexical_signal_skips_expansion(engine: Engine, tmp_path: Path) -> None:
    _, weak = _search(engine, expand=True, budget_ms=None)
    assert not weak.strong_signal and "expand" in weak.timings_ms, "an ordinary question is expanded"
    name = engine.add_collection(write_tree(tmp_path / "q", {
        "a.py": "def quuxifier_frobnicate():\n    return 1\n",
        **{f"n{i}.py": f"def plain_{i}():\n    return {i}\n" for i in range(20)},
    }), "q").name
    engine.update([name])
    trace = SearchTrace()
    options = SearchOptions(vectors=False, expand=True)
    engine.search("quuxifier_frobnicate", [name], options=options, trace=trace)
    assert trace.strong_signal and "expand" not in trace.timings_ms and trace.expanded == []
