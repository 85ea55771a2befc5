"""Every path and knob in one place: the only module that reads a `QMD_*` environment variable
(tests/test_settings_knobs.py fails on a read anywhere else; docs/usage.md's table lists them all).

`QMD_DAEMON_HOME` relocates all state (config, cache, state, logs) under one folder, so tests
never touch the real home. `Settings` holds what the engine, models and daemon use;
`SetupSettings` the installer's and its Auto benchmark's knobs (install-time only).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from qmd_daemon.file_types import default_mask

# Every file `file_types` knows (its one table of languages). index.yml stores a collection's
# pattern only when it is not the default, so a collection on the default picks up a language added
# to the table at its next update; a pattern equal to an earlier default counts as the default.
DEFAULT_MASK = default_mask()
EARLIER_DEFAULT_MASKS = frozenset(
    {
        "**/*.{md,mdx,rst,txt,py,pyi,cs,ts,tsx,js,jsx,mjs,cjs,go,rs,java,ps1,sh,bash,json,yml,yaml,toml,xml,"
        "sql,c,h,cc,cpp,cxx,hpp,hh,rb,php,kt,kts,swift,scala,lua,ex,exs,hs,zig,dart,vue,svelte,r,jl,pl,"
        "proto,graphql,tf,gradle,cmake}"
    }
)
DEFAULT_EXCLUDES = (
    "node_modules/",
    ".git/",
    ".hg/",
    ".svn/",
    ".cache/",
    "vendor/",
    "dist/",
    "build/",
    "__pycache__/",
    "*.egg-info/",
    ".eggs/",
    ".venv/",
    "venv/",
    ".tox/",
    ".mypy_cache/",
    ".pytest_cache/",
    "target/",
    "*.min.js",
    "*.min.css",
    "*.lock",
    "package-lock.json",
)
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
# A new collection with more indexable files than this (after mask, excludes and the file size
# cap), or more bytes of them, is refused with a message naming the override: a home folder or a
# data dump would otherwise be indexed for hours. 0 turns a cap off (docs/security.md).
DEFAULT_MAX_COLLECTION_FILES = 100_000
DEFAULT_MAX_COLLECTION_MB = 2048
# The daemon's background embedding's CPU priority (QMD_EMBED_PRIORITY; bench/embed_nice.py): nice
# 19. It was off while a refresh waited for the niced job's running batch (an edit's search held
# 5.7-40 s on a busy machine); a queued job now stops that batch mid-decode (models/abort.py), and
# an edit was visible in 0.40-0.86 s p50 at 19 against 1.86-2.99 s at off (docs/scale.md)
DEFAULT_EMBED_PRIORITY = "19"
# Folders under the home folder that hold credentials: never a collection, nor anything in them.
CREDENTIAL_FOLDERS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    ".pki",
    ".terraform.d",
    ".mozilla",
    ".thunderbird",
)
# Folders of application settings, where tokens live too (~/.config/gh/hosts.yml): only a git
# repository inside one (a dotfiles repository), and only added by name with `collection add`.
SETTINGS_FOLDERS = (".config", ".local")


# One environment variable per model role: a reference that wins over index.yml's `models:`.
MODEL_ENV_VARS: dict[str, str] = {
    "embed": "QMD_EMBED_MODEL",
    "rerank": "QMD_RERANK_MODEL",
    "expand": "QMD_EXPAND_MODEL",
}
# The variables that decide where the index, its config and the models are, or which server or
# models: nothing stores them, so a daemon an agent starts finds what an install made with them
# only when the agent's environment has them too
PLACEMENT_ENV_VARS = (
    "QMD_DAEMON_HOME", "QMD_CONFIG_DIR", "QMD_INDEX_PATH", "QMD_MODELS_DIR", "QMD_DATABASE_URL",
    *MODEL_ENV_VARS.values(),
)


def placement_variables() -> list[str]:
    """The PLACEMENT_ENV_VARS set in this process's environment (names only: a database URL may
    hold a password)."""
    return [name for name in PLACEMENT_ENV_VARS if os.environ.get(name)]


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else None


def _env_text(name: str) -> str:
    return os.environ.get(name, "").strip()


def _env_flag(name: str) -> bool:
    return _env_text(name).lower() in ("1", "true", "yes", "on")


def _env_int(name: str) -> int:
    """A positive integer, else 0 (unset or unreadable: the caller's automatic choice)."""
    try:
        return max(0, int(_env_text(name) or 0))
    except ValueError:
        return 0


def _env_float(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= 0 else default


@dataclass(frozen=True)
class Settings:
    config_dir: Path
    cache_dir: Path
    state_dir: Path
    index_path: Path
    idle_minutes: float = 30.0
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    excludes: tuple[str, ...] = field(default=DEFAULT_EXCLUDES)
    max_collection_files: int = DEFAULT_MAX_COLLECTION_FILES
    max_collection_mb: int = DEFAULT_MAX_COLLECTION_MB
    # QMD_DATABASE_URL: the PostgreSQL server of `backend: postgres` when index.yml names none
    # (a DSN holds a password: the environment keeps it out of a file others may read)
    database_url: str | None = None
    preload: bool = True  # QMD_PRELOAD=0: the daemon loads the embedder on first use, not at start
    force_cpu: bool = False  # QMD_FORCE_CPU: never offload to a GPU (wins over everything)
    llama_gpu: str = ""  # QMD_LLAMA_GPU: 0/off/cpu or 1/on/auto, over index.yml's `device`
    threads: int = 0  # QMD_THREADS: llama.cpp threads (0: min(4, cores))
    # QMD_EMBED_PRIORITY: the daemon's background embedding's CPU priority (daemon/priority.py):
    # off, a nice value 1-19, or idle (SCHED_IDLE); an unreadable value keeps the default
    embed_priority: str = DEFAULT_EMBED_PRIORITY
    model_overrides: Mapping[str, str] = field(default_factory=dict)  # role -> QMD_*_MODEL

    @property
    def config_file(self) -> Path:
        return self.config_dir / "index.yml"

    @property
    def models_dir(self) -> Path:
        """Built and downloaded models; QMD_MODELS_DIR shares one copy between several homes."""
        return _env_path("QMD_MODELS_DIR") or self.cache_dir / "models"

    @classmethod
    def from_env(cls) -> Settings:
        home = _env_path("QMD_DAEMON_HOME")
        user_home = Path.home()
        if home is not None:
            config = home / "config"
            cache = home / "cache"
            state = home / "state"
        else:
            config = (_env_path("XDG_CONFIG_HOME") or user_home / ".config") / "qmd-daemon"
            cache = (_env_path("XDG_CACHE_HOME") or user_home / ".cache") / "qmd-daemon"
            state = (_env_path("XDG_STATE_HOME") or user_home / ".local" / "state") / "qmd-daemon"
        config = _env_path("QMD_CONFIG_DIR") or config
        index = _env_path("QMD_INDEX_PATH") or cache / "index.sqlite"
        max_bytes = int(_env_float("QMD_MAX_FILE_BYTES", DEFAULT_MAX_FILE_BYTES))
        return cls(
            config_dir=config,
            cache_dir=cache,
            state_dir=state,
            index_path=index,
            idle_minutes=_env_float("QMD_IDLE_MINUTES", 30.0),
            max_file_bytes=max_bytes,
            max_collection_files=int(_env_float("QMD_MAX_COLLECTION_FILES", DEFAULT_MAX_COLLECTION_FILES)),
            max_collection_mb=int(_env_float("QMD_MAX_COLLECTION_MB", DEFAULT_MAX_COLLECTION_MB)),
            database_url=os.environ.get("QMD_DATABASE_URL") or None,
            preload=os.environ.get("QMD_PRELOAD", "1") != "0",
            force_cpu=_env_flag("QMD_FORCE_CPU"),
            llama_gpu=_env_text("QMD_LLAMA_GPU").lower(),
            threads=_env_int("QMD_THREADS"),
            embed_priority=_env_text("QMD_EMBED_PRIORITY") or DEFAULT_EMBED_PRIORITY,
            model_overrides={role: v for role, name in MODEL_ENV_VARS.items() if (v := _env_text(name))},
        )


@dataclass(frozen=True)
class SetupSettings:
    """The installer's knobs (`install.sh`, `qmd-daemon bench --auto`): where it installs, which
    Python builds the environment, the Auto benchmark's thresholds, and a test seam."""

    data_dir: Path  # skill, hooks and the owned venv
    bin_dir: Path  # the ai-search / qmd-warm wrappers
    base_python: str = ""  # QMD_SETUP_BASE_PYTHON: the interpreter that creates the venv
    venv_extra_site: str = ""  # QMD_SETUP_VENV_EXTRA_SITE: a site folder the venv also reads
    fail_after: str = ""  # QMD_SETUP_FAIL_AFTER: raise right after this step (rollback tests)
    benchmark_fixtures: Path | None = None  # QMD_BENCHMARK_FIXTURES
    benchmark_max_query_seconds: float = 5.0
    benchmark_max_embed_minutes: float = 60.0  # the index's chunks embed (deep pass) within this
    benchmark_max_static_minutes: float = 10.0  # the index's chunks get static vectors within this
    benchmark_device_timeout: float = 600.0

    @classmethod
    def from_env(cls) -> SetupSettings:
        home = Path.home()
        qmd_home = _env_path("QMD_DAEMON_HOME")
        if qmd_home is not None:
            data = qmd_home / "data"
        else:
            data = (_env_path("XDG_DATA_HOME") or home / ".local" / "share") / "qmd-daemon"
        return cls(
            data_dir=_env_path("QMD_SETUP_DATA_DIR") or data,
            bin_dir=_env_path("QMD_SETUP_BIN_DIR") or home / ".local" / "bin",
            base_python=_env_text("QMD_SETUP_BASE_PYTHON"),
            venv_extra_site=_env_text("QMD_SETUP_VENV_EXTRA_SITE"),
            fail_after=_env_text("QMD_SETUP_FAIL_AFTER"),
            benchmark_fixtures=_env_path("QMD_BENCHMARK_FIXTURES"),
            benchmark_max_query_seconds=_env_float("QMD_BENCHMARK_MAX_QUERY_SECONDS", 5.0),
            benchmark_max_embed_minutes=_env_float("QMD_BENCHMARK_MAX_EMBED_MINUTES", 60.0),
            benchmark_max_static_minutes=_env_float("QMD_BENCHMARK_MAX_STATIC_MINUTES", 10.0),
            benchmark_device_timeout=_env_float("QMD_BENCHMARK_DEVICE_TIMEOUT", 600.0),
        )
