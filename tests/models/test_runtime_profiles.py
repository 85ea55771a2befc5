"""Device, threads, lazy load/unload, and the small profile's idempotent build."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qmd_daemon.models import ModelError
from qmd_daemon.models.profiles import build_small_profile, profile_uris, resolve_role
from qmd_daemon.models.runtime import ModelHandle, default_threads, gpu_available, llama_module, select_device
from qmd_daemon.models.uris import DEFAULT_URIS
from qmd_daemon.settings import MODEL_ENV_VARS


def test_omp_policy_and_gpu_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    llama_module()
    assert os.environ.get("OMP_WAIT_POLICY")
    module = llama_module()
    for supported in (True, False):
        monkeypatch.setattr(module, "llama_supports_gpu_offload", lambda s=supported: s)
        assert gpu_available() is supported


def test_device_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QMD_LLAMA_GPU", raising=False)
    monkeypatch.setenv("QMD_FORCE_CPU", "1")
    assert select_device("gpu") == "cpu"
    monkeypatch.delenv("QMD_FORCE_CPU")
    assert select_device("cpu") == "cpu"
    assert select_device("auto") == ("gpu" if gpu_available() else "cpu")
    monkeypatch.setenv("QMD_LLAMA_GPU", "off")
    assert select_device("gpu") == "cpu"


def test_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QMD_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("QMD_THREADS", "junk")
    assert 1 <= default_threads() <= 4


def test_handle_lazy_load_and_unload(small_models: dict[str, Path]) -> None:
    handle = ModelHandle(small_models["embed"], embedding=True, n_ctx=4096, threads=1)
    assert handle.n_ctx == 512  # BERT encoder: capped to its 512 positions
    assert not handle.loaded
    with handle.acquire() as llm:
        assert llm.n_ctx() == 512 and handle.loaded
    handle.unload()
    assert not handle.loaded
    with handle.acquire() as llm:
        assert llm.n_embd() == 384
    handle.unload()


def test_small_profile_idempotent(small_models: dict[str, Path]) -> None:
    stamps = {role: p.stat().st_mtime_ns for role, p in small_models.items()}
    again = build_small_profile(small_models["embed"].parent)
    assert again == small_models
    assert {role: p.stat().st_mtime_ns for role, p in again.items()} == stamps
    assert small_models["rerank"] == small_models["expand"]
    assert not [p for p in small_models["embed"].parent.iterdir() if p.name.endswith(".tmp")]


def test_profile_resolution(small_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                            tiny_gguf: Path) -> None:
    for var in MODEL_ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    models_dir = small_models["embed"].parent
    assert profile_uris("qwen3", models_dir) == DEFAULT_URIS
    assert resolve_role("embed", {"profile": "small", "embed": str(tiny_gguf)}, models_dir) == tiny_gguf
    monkeypatch.setenv("QMD_RERANK_MODEL", tiny_gguf.as_uri())
    assert resolve_role("rerank", {"profile": "small"}, models_dir) == tiny_gguf
    with pytest.raises(ModelError, match="unknown model profile"):
        profile_uris("huge", models_dir)
