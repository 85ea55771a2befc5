"""Reranking with the small profile's Gemma 3 270M (logits path): bounded, deterministic, cached."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from qmd_daemon.models.reranker import JUDGE_SYSTEM, Reranker, _head_score, _p_yes, judge_prompt
from tests.models.memory_cache import MemoryCache

QUERY = "parse yaml config file"
DOCS = [
    "def load_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)",
    "The cat sat on the mat and purred quietly all afternoon.",
    "class HttpServer:\n    def serve(self, port): ...",
]


@pytest.fixture(scope="module")
def reranker(small_models: dict[str, Path]) -> Reranker:
    rr = Reranker(small_models["rerank"], threads=2, n_ctx=512)
    yield rr
    rr.unload()


def test_scores_bounded_and_deterministic(reranker: Reranker) -> None:
    assert reranker.mode == "logits" and not reranker.chatml
    first = reranker.score(QUERY, DOCS)
    assert len(first) == len(DOCS) and all(0.0 <= s <= 1.0 for s in first)
    assert reranker.score(QUERY, DOCS) == first
    # a pair scores the same whatever else is in the batch (the query prefix is reused)
    assert reranker.score(QUERY, DOCS[::-1])[::-1] == pytest.approx(first, abs=1e-6)
    assert reranker.score(QUERY, []) == []


def test_long_document_is_capped(reranker: Reranker) -> None:
    (score,) = reranker.score(QUERY, ["yaml " * 5000])
    assert 0.0 <= score <= 1.0


def test_cache_hit(small_models: dict[str, Path], reranker: Reranker) -> None:
    cache = MemoryCache()
    rr = Reranker(small_models["rerank"], cache=cache, threads=2, n_ctx=512)
    rr.handle = reranker.handle  # share the loaded model
    first = rr.score(QUERY, DOCS)
    assert cache.hits == 0 and len(cache.data) == len(DOCS)
    assert rr.score(QUERY, DOCS) == first
    assert cache.hits == len(DOCS)


def test_prompts() -> None:
    chat = judge_prompt("q", "find code", chatml=True)
    assert chat.prefix.startswith("<|im_start|>system\n" + JUDGE_SYSTEM)
    assert "<Instruct>: find code\n<Query>: q\n<Document>:" in chat.prefix
    assert chat.suffix.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert (chat.yes, chat.no) == ("yes", "no")
    plain = judge_prompt("q", "find code", chatml=False)
    assert plain.suffix.endswith("Answer:") and (plain.yes, plain.no) == (" yes", " no")


def test_score_math() -> None:
    assert _p_yes(0.0, 0.0) == 0.5
    assert _p_yes(1000.0, -1000.0) == pytest.approx(1.0)
    assert _head_score([0.7, 0.3]) == pytest.approx(0.7)  # already softmaxed by llama.cpp
    assert _head_score([2.0, 0.0]) == pytest.approx(_p_yes(2.0, 0.0))
    assert _head_score([0.0]) == pytest.approx(0.5)


def test_a_pace_measured_under_a_load_spike_is_measured_again(reranker: Reranker) -> None:
    # Only a pair that runs updates the pace; with one slow pair on record every search found no
    # room for a pair and reranking stayed off for the rest of the process (seen: "0 of 23").
    from qmd_daemon.search.candidates import Candidate
    from qmd_daemon.search.rerank import rerank
    from qmd_daemon.store.protocols import ChunkRow

    ranked = [Candidate(ChunkRow(i, i, "c", f"m{i}.py", "code", "python", 1, 3, doc, "", "", "", ""),
                        score=1.0 - i / 10) for i, doc in enumerate(DOCS)]
    reranker.score("warm up the model", DOCS[:1])
    reranker.pair_seconds = 30.0  # as if one pair had taken 30 s
    rescored = []
    for attempt in range(60):
        budget = time.perf_counter() + 2.0
        rescored.append(rerank(reranker, f"{QUERY} {attempt}", list(ranked), len(ranked), budget)[1])
        if rescored[-1]:
            break
    assert rescored[0] == 0 and rescored[-1] >= 1
    assert reranker.pair_seconds is not None and reranker.pair_seconds < 30.0
