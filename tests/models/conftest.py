"""Model-test fixtures (the `small` profile itself is in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


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
