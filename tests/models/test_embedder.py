"""The converted MiniLM GGUF loads in llama.cpp and embeds like the original model."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from qmd_daemon.models import ModelError
from qmd_daemon.models.convert_bert import convert_bert, read_safetensors
from qmd_daemon.models.embedder import Embedder
from qmd_daemon.models.gguf_info import read_gguf_info
from qmd_daemon.models.minilm_wheel import checkpoint
from qmd_daemon.models.profiles import small_downloads_dir
from tests.conftest import MODELS_DIR


def _reference(ids: list[int]) -> np.ndarray:
    """all-MiniLM-L6-v2 forward pass in numpy (f32 weights): mean pooling, L2-normalised."""
    with checkpoint(small_downloads_dir(MODELS_DIR)) as folder:
        w = {k: v.astype(np.float32) for k, v in read_safetensors(folder / "model.safetensors").items()}

    def ln(x: np.ndarray, p: str) -> np.ndarray:
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * w[p + ".weight"] + w[p + ".bias"]

    def lin(x: np.ndarray, p: str) -> np.ndarray:
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    erf = np.vectorize(math.erf)
    n = len(ids)
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = ln(x, "embeddings.LayerNorm")
    for i in range(6):
        p = f"encoder.layer.{i}."
        q, k, v = (lin(x, p + "attention.self." + s).reshape(n, 12, 32).transpose(1, 0, 2)
                   for s in ("query", "key", "value"))
        a = q @ k.transpose(0, 2, 1) / math.sqrt(32)
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        x = ln(x + lin((a @ v).transpose(1, 0, 2).reshape(n, 384), p + "attention.output.dense"),
               p + "attention.output.LayerNorm")
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        x = ln(x + lin(h, p + "output.dense"), p + "output.LayerNorm")
    e = x.mean(0)
    return e / np.linalg.norm(e)


def test_converted_header(small_models: dict[str, Path]) -> None:
    info = read_gguf_info(small_models["embed"])
    assert info.architecture == "bert"
    assert info.arch_value("embedding_length") == 384
    assert info.arch_value("pooling_type") == 1  # mean
    assert info.metadata["tokenizer.ggml.model"] == "bert"
    assert info.data_end == small_models["embed"].stat().st_size


def test_embeds_normalised_384(embedder: Embedder) -> None:
    vecs = embedder.embed_documents(["def parse_config(path):\n    return yaml.safe_load(open(path))", "x"])
    assert embedder.dim == 384 and embedder.family == "bert"
    for v in vecs:
        assert len(v) == 384
        assert abs(np.linalg.norm(v) - 1.0) < 1e-5
    assert embedder.embed_documents([]) == []


def test_similar_texts_are_closer(embedder: Embedder) -> None:
    a, b, c = (np.array(v) for v in embedder.embed_documents(
        ["read the yaml configuration file", "load config settings from a yaml file",
         "the cat sat quietly on the warm mat"]))
    assert a @ b > a @ c + 0.3
    q = np.array(embedder.embed_query("yaml config loading"))
    assert q @ a > q @ c


def test_matches_numpy_reference(embedder: Embedder) -> None:
    text = "def parse_config(path): return yaml.safe_load(open(path))"
    with embedder.handle.acquire() as llm:
        ids = llm.tokenize(text.encode(), add_bos=True, special=False)
    got = np.array(embedder.embed_documents([text])[0])
    assert float(got @ _reference(ids)) > 0.999


def test_long_input_truncated_not_crashing(embedder: Embedder) -> None:
    long_text = "token " * 3000  # far over the 512-token encoder context
    (vec,) = embedder.embed_documents([long_text])
    assert len(vec) == 384 and abs(np.linalg.norm(vec) - 1) < 1e-5


def test_packed_decode_matches_single(small_models: dict[str, Path]) -> None:
    texts = ["alpha beta gamma", "def f(x): return x + 1", "sqlite vector index"]
    single = Embedder(small_models["embed"], threads=2).embed_documents(texts)
    packed = Embedder(small_models["embed"], threads=2, seqs_per_decode=3).embed_documents(texts)
    for s, p in zip(single, packed, strict=True):
        assert float(np.dot(s, p)) > 0.9999


def test_fingerprint_stable(small_models: dict[str, Path], embedder: Embedder) -> None:
    again = Embedder(small_models["embed"])
    assert again.fingerprint == embedder.fingerprint
    assert again.fingerprint.startswith(small_models["embed"].name + ":")


def test_convert_rejects_bad_qtype(tmp_path: Path) -> None:
    minilm = checkpoint(small_downloads_dir(MODELS_DIR))
    with minilm as folder, pytest.raises(ModelError, match="unsupported"):
        convert_bert(folder, tmp_path / "x.gguf", qtype="q4_0")
    assert not list(tmp_path.iterdir())
