"""Shared fixtures: the `small` model profile, built once per session inside the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.models.profiles import build_small_profile

REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = REPO_ROOT / ".test-cache" / "models"


@pytest.fixture(scope="session")
def small_models() -> dict[str, Path]:
    """Role -> GGUF of the small profile (MiniLM q8_0, Gemma 3 270M), cached across runs."""
    return build_small_profile(MODELS_DIR)


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few-KB valid GGUF (one tensor), for download and file-check tests."""
    import gguf
    import numpy as np

    path = tmp_path_factory.mktemp("tiny") / "tiny.gguf"
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tiny")
    w.add_tensor("token_embd.weight", np.arange(64 * 64, dtype=np.float32).reshape(64, 64))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
