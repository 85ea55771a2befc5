"""The production (Qwen3) code paths, run on random-weight qwen3 GGUFs built by tiny_qwen3.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qmd_daemon.models.embedder import Embedder
from qmd_daemon.models.expander import Expander
from qmd_daemon.models.reranker import Reranker
from tests.models.memory_cache import MemoryCache

from .tiny_qwen3 import write_tiny_qwen3


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("qwen3")
    return {
        "embed": write_tiny_qwen3(d / "embed.gguf", pooling_last=True),
        "lm": write_tiny_qwen3(d / "lm.gguf"),
        "rank": write_tiny_qwen3(d / "rank.gguf", rank_head=True),
    }


def test_decoder_embedder_last_token_eos_prefix(tiny: dict[str, Path]) -> None:
    emb = Embedder(tiny["embed"], threads=1, n_ctx=256)
    assert emb.family == "decoder" and emb.dim == 64
    with emb.handle.acquire() as llm:
        eos = llm.token_eos()
        assert emb.framed_tokens(llm, "hello")[-1] == eos
        long = emb.framed_tokens(llm, "word " * 1000)
        assert len(long) == 256 and long[-1] == eos
    docs = emb.embed_documents(["hello world", "def f(): pass", "word " * 1000])
    assert all(len(v) == 64 and abs(np.linalg.norm(v) - 1) < 1e-5 for v in docs)
    prompt = emb.query_text("find x")
    assert prompt.startswith("Instruct: ") and prompt.endswith("\nQuery: find x")
    q = emb.embed_query("hello world")
    assert float(np.dot(q, docs[0])) < 0.9999  # the instruction prefix changes the query vector
    assert emb.embed_documents(["hello world"]) == docs[:1]


def test_causal_lm_reranker_chatml(tiny: dict[str, Path]) -> None:
    rr = Reranker(tiny["lm"], threads=1, n_ctx=512)
    assert rr.mode == "logits" and rr.chatml
    docs = ["a", "yaml loader code", "b" * 2000]
    first = rr.score("find yaml", docs)
    assert all(0.0 <= s <= 1.0 for s in first)
    assert rr.score("find yaml", docs) == first
    assert rr.score("find yaml", docs[::-1])[::-1] == pytest.approx(first, abs=1e-6)


def test_rank_head_reranker(tiny: dict[str, Path]) -> None:
    cache = MemoryCache()
    rr = Reranker(tiny["rank"], threads=1, n_ctx=512, cache=cache)
    assert rr.mode == "head"
    docs = ["a", "yaml loader code", "b" * 2000]
    first = rr.score("find yaml", docs)
    assert all(0.0 <= s <= 1.0 for s in first)
    rr.cache = None
    assert rr.score("find yaml", docs[1:2]) == pytest.approx(first[1:2], abs=1e-5)  # packing-independent
    rr.cache = cache
    assert rr.score("find yaml", docs) == first and cache.hits == 3


def test_chat_template_expander(tiny: dict[str, Path]) -> None:
    cache = MemoryCache()
    exp = Expander(tiny["lm"], cache=cache, threads=1, max_tokens=8, n_ctx=256)
    assert exp.chat
    first = exp.expand("yaml config")
    assert isinstance(first, list) and len(cache.data) == 1
    assert exp.expand("yaml config") == first and cache.hits == 1
