"""The small profile's rerank and expand roles share one Gemma: one llama.cpp model, loaded once,
and each role's results are those it gives on a model of its own."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.models.expander import Expander
from qmd_daemon.models.model_set import ModelSet
from qmd_daemon.models.reranker import Reranker
from tests.conftest import MODELS_DIR

QUERY = "read the yaml configuration file"
DOCS = [
    "def load_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)",
    "class HttpServer:\n    def serve(self, port): ...",
]


def test_rerank_and_expand_use_one_loaded_model(small_models: dict[str, Path]) -> None:
    models = ModelSet({"profile": "small", "device": "cpu"}, MODELS_DIR)
    try:
        expander, reranker = models.expander(), models.reranker()  # the smaller context first
        assert expander is not None and reranker is not None
        assert expander.handle is reranker.handle
        assert reranker.handle.n_ctx == Reranker(small_models["rerank"], device="cpu").handle.n_ctx

        expansions = expander.expand(QUERY)
        llm = reranker.handle._llm
        scores = reranker.score(QUERY, DOCS)
        assert reranker.handle._llm is llm is not None  # no second load, no reload
        assert expander.expand("close the socket") is not None
        assert reranker.score(QUERY, DOCS[::-1]) == scores[::-1]  # the expander's state is not read
    finally:
        models.unload()

    alone_reranker = Reranker(small_models["rerank"], device="cpu")
    alone_expander = Expander(small_models["expand"], device="cpu", n_ctx=reranker.handle.n_ctx)
    try:
        assert alone_reranker.score(QUERY, DOCS) == scores
        assert alone_expander.expand(QUERY) == expansions
    finally:
        alone_reranker.unload()
        alone_expander.unload()
