"""Bad model files give one-line ModelErrors, never a llama.cpp crash or a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.models import ModelError
from qmd_daemon.models.embedder import Embedder
from qmd_daemon.models.gguf_info import check_gguf
from qmd_daemon.models.reranker import Reranker
from qmd_daemon.models.uris import resolve


def _one_line(exc: pytest.ExceptionInfo[ModelError]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and msg
    return msg


def test_truncated_gguf(small_models: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(small_models["embed"].read_bytes()[: 3 << 20])
    with pytest.raises(ModelError) as exc:
        check_gguf(bad)
    assert "truncated" in _one_line(exc)
    assert "delete" not in str(exc.value) and "pull" not in str(exc.value), "a user's own file"
    with pytest.raises(ModelError, match="truncated"):
        Embedder(bad)


def test_header_cut_short(tmp_path: Path) -> None:
    bad = tmp_path / "head.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00\x05")
    with pytest.raises(ModelError) as exc:
        check_gguf(bad)
    assert "damaged" in _one_line(exc)


def test_html_named_gguf(tmp_path: Path) -> None:
    page = tmp_path / "model.gguf"
    page.write_text("<!DOCTYPE html><html><body>Access denied</body></html>")
    with pytest.raises(ModelError) as exc:
        Reranker(page)
    msg = _one_line(exc)
    assert "not a GGUF" in msg and "HTML" in msg


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as exc:
        resolve(str(tmp_path / "nope.gguf"))
    assert "not found" in _one_line(exc)
    with pytest.raises(ModelError, match="folder"):
        check_gguf(tmp_path)


def test_file_uri(tiny_gguf: Path) -> None:
    assert resolve(tiny_gguf.as_uri()) == tiny_gguf
    assert resolve(str(tiny_gguf)) == tiny_gguf
