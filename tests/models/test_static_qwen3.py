"""The static tier on the default profile's architecture: random-weight `qwen3` GGUFs
(tiny_qwen3.py) configured as the product configures Qwen3-Embedding (last-token pooling),
through real llama.cpp, real SQLite and the engine's own static pass and search.

Scores from random weights mean nothing (and the distillation rate of a 262-token, 64-dim model
says nothing about the 0.6B model's): these tests check the framing of the distilled rows,
coverage, shapes, the rows file and the search's `static` list.
"""

from __future__ import annotations

import ctypes
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from qmd_daemon.config import IndexConfig
from qmd_daemon.engine import Engine
from qmd_daemon.models.embedder import Embedder
from qmd_daemon.models.runtime import llama_module
from qmd_daemon.models.static_table import StaticModel, TokenRows, rows_path
from qmd_daemon.search.pipeline import SearchOptions, SearchTrace
from qmd_daemon.settings import Settings
from tests.conftest import REPO_ROOT

from .tiny_qwen3 import write_tiny_qwen3

# A small real folder of this repository, indexed as a user's repository would be
REPOSITORY_FOLDER = REPO_ROOT / "qmd_daemon" / "text"


@pytest.fixture(scope="module")
def qwen3_embed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Qwen3 embedders as the product runs them: last-token pooling; one whose tokenizer appends
    the EOS itself (`tokenizer.ggml.add_eos_token`, as newer Qwen3-Embedding conversions set)."""
    d = tmp_path_factory.mktemp("qwen3-static")
    return {
        "plain": write_tiny_qwen3(d / "embed.gguf", pooling_last=True),
        "add_eos": write_tiny_qwen3(d / "embed-eos.gguf", pooling_last=True, add_eos=True),
    }


def _eos_reading(path: Path, token: int) -> np.ndarray:
    """The hidden state at the EOS of `token EOS` (Qwen3-Embedding's framing: no BOS, the text,
    the EOS its last-token pooling reads), computed apart from the product's code: a fresh
    llama.cpp context WITHOUT pooling, one sequence, the last position's output read directly."""
    llama_cpp = llama_module()
    llm = llama_cpp.Llama(model_path=str(path), embedding=True, n_ctx=64, n_threads=1,
                          pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE, verbose=False)
    try:
        seq = [token, llm.token_eos()]
        batch = llama_cpp.llama_batch_init(len(seq), 0, 1)
        try:
            for pos, tok in enumerate(seq):
                batch.token[pos], batch.pos[pos], batch.n_seq_id[pos] = tok, pos, 1
                batch.seq_id[pos][0], batch.logits[pos] = 0, pos == len(seq) - 1
            batch.n_tokens = len(seq)
            assert llama_cpp.llama_decode(llm.ctx, batch) == 0
            ptr = llama_cpp.llama_get_embeddings_ith(llm.ctx, len(seq) - 1)
            floats = ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float))
            return np.array(floats[: llm.n_embd()], dtype=np.float32)
        finally:
            llama_cpp.llama_batch_free(batch)
    finally:
        llm.close()


@pytest.mark.parametrize("variant", ["plain", "add_eos"])
def test_distilled_rows_are_the_decoders_reading_at_the_eos(
    qwen3_embed: dict[str, Path], tmp_path: Path, variant: str
) -> None:
    path = qwen3_embed[variant]
    embedder = Embedder(path, threads=1)
    model = StaticModel(embedder, tmp_path / "models")
    assert model.dim == 64 and model.rows.n_vocab == 262
    tokens = sorted(set(model.tokenize(["def backoff(n): yes no"])[0]))
    assert model.distil(tokens) == len(tokens) and model.distil(tokens) == 0  # once per token
    rows = model.rows.gather(tokens)
    assert rows.shape == (len(tokens), 64)
    for token, row in zip(tokens, rows, strict=True):
        expected = _eos_reading(path, token)
        np.testing.assert_allclose(row, expected, rtol=2e-3, atol=2e-3 * float(np.abs(expected).max()))
    # and the row is the direction the embedder gives that token's text as a chunk
    yes = model.tokenize(["yes"])[0]
    assert len(yes) == 1 and yes[0] in tokens
    chunk = np.asarray(embedder.embed_documents(["yes"])[0])
    row = model.rows.gather(yes)[0]
    assert float(np.dot(chunk, row / np.linalg.norm(row))) > 0.9999


@pytest.fixture(params=["plain", "add_eos"])
def qwen3_engine(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch,
    qwen3_embed: dict[str, Path], tmp_path: Path,
) -> Iterator[Engine]:
    """An Engine whose embedder is a qwen3 GGUF (rerank and expand off: not under test here)."""
    monkeypatch.setenv("QMD_MODELS_DIR", str(tmp_path / "models"))
    settings = Settings.from_env()
    config = IndexConfig.load(settings.config_file)
    config.set_models({"embed": str(qwen3_embed[request.param]), "rerank": "off", "expand": "off"})
    config.save()
    engine = Engine(settings)
    yield engine
    engine.close()


def _hits(engine: Engine, query: str, name: str, *, vectors: bool, trace: SearchTrace | None = None,
          prf_chunks: int = SearchOptions.prf_chunks) -> list[str]:
    options = SearchOptions(vectors=vectors, prf_chunks=prf_chunks)
    hits = engine.search(query, [name], options=options, trace=trace)
    return [f"{h.path}:{h.end_line}" for h in hits]


def test_static_pass_and_search_on_a_qwen3_index(qwen3_engine: Engine, tmp_path: Path) -> None:
    engine = qwen3_engine
    root = shutil.copytree(REPOSITORY_FOLDER, tmp_path / "repo", ignore=shutil.ignore_patterns("__pycache__"))
    name = engine.add_collection(root).name
    engine.update([name])
    chunks = engine.status()["static_vectors"]["chunks"]
    assert chunks >= 10 and engine.status()["static_vectors"]["vectors"] == 0

    report = engine.embed_static(engine.collection_ids([name]), progress=False)
    assert report is not None and (report["embedded"], report["pending"]) == (chunks, 0)
    status = engine.status()
    assert (status["static_vectors"]["vectors"], status["static_vectors"]["chunks"]) == (chunks, chunks)
    assert status["vectors"]["embedded"] == 0  # the deep pass has not run: only the static tier

    tier = engine.static_tier()
    assert tier is not None and tier.model.dim == 64
    # every token the pooled chunks use (the store's counts) has its row, and no other has one
    (collection_id,) = engine.collection_ids([name])
    docs, df = tier.vectors.token_df(collection_id, range(tier.model.rows.n_vocab))
    assert docs == chunks and 0 < len(df) < tier.model.rows.n_vocab
    assert sorted(tier.model.rows.ids.tolist()) == sorted(df) and report["distilled"] == len(df)
    with tier.model.source.handle.acquire() as llm:  # the frame's EOS is no chunk's token
        assert llm.token_eos() not in df
    # one 64-dim int8 row a chunk, scaled to 127 (store/static_vectors.py); a fresh SQLite index
    # numbers its chunks from 1
    stored = tier.vectors.vectors_of(list(range(1, 10 * chunks)))
    assert len(stored) == chunks
    assert all(vec.shape == (64,) and np.abs(vec).max() == 127 for _c, vec in stored.values())

    # the rows file round-trips: read back, the same tokens and the same rows
    embedder = engine.models.embedder()
    assert embedder is not None
    path = rows_path(engine.settings.models_dir, embedder.fingerprint)
    again = TokenRows(path, tier.model.rows.n_vocab, 64)
    assert sorted(again.ids.tolist()) == sorted(tier.model.rows.ids.tolist())
    ids = tier.model.rows.ids
    np.testing.assert_array_equal(again.gather(ids), tier.model.rows.gather(ids))

    for query in ["split code words", "tokenize identifiers"]:
        lexical = _hits(engine, query, name, vectors=False, prf_chunks=0)  # none beside static vectors
        trace = SearchTrace()
        hybrid = _hits(engine, query, name, vectors=True, trace=trace)
        assert lexical, query
        assert set(trace.lists) == {"bm25", "static"} and trace.mode == "hybrid"
        assert sorted(hybrid) == sorted(lexical), "the static list only reorders lexical's candidates"
        assert _hits(engine, query, name, vectors=True) == hybrid  # deterministic
