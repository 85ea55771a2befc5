"""Every path and knob in one place, read from the environment once per process.

`QMD_DAEMON_HOME` relocates all state (config, cache, state, logs) under one folder, so tests
never touch the real home.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MASK = (
    "**/*.{md,mdx,rst,txt,py,pyi,cs,ts,tsx,js,jsx,mjs,cjs,go,rs,java,ps1,sh,bash,json,yml,yaml,toml,xml,"
    "sql,c,h,cc,cpp,cxx,hpp,hh,rb,php,kt,kts,swift,scala,lua,ex,exs,hs,zig,dart,vue,svelte,r,jl,pl,"
    "proto,graphql,tf,gradle,cmake}"
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
    "*.lock",
    "package-lock.json",
)
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
# A new collection with more indexable files than this (after mask, excludes and the file size
# cap), or more bytes of them, is refused with a message naming the override: a home folder or a
# data dump would otherwise be indexed for hours. 0 turns a cap off (docs/security.md).
DEFAULT_MAX_COLLECTION_FILES = 100_000
DEFAULT_MAX_COLLECTION_MB = 2048
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


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value).expanduser() if value else None


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
    log_dir: Path
    index_path: Path
    idle_minutes: float = 30.0
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    excludes: tuple[str, ...] = field(default=DEFAULT_EXCLUDES)
    max_collection_files: int = DEFAULT_MAX_COLLECTION_FILES
    max_collection_mb: int = DEFAULT_MAX_COLLECTION_MB
    # QMD_DATABASE_URL: the PostgreSQL server of `backend: postgres` when index.yml names none
    # (a DSN holds a password: the environment keeps it out of a file others may read)
    database_url: str | None = None

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
            log_dir=state / "logs",
            index_path=index,
            idle_minutes=_env_float("QMD_IDLE_MINUTES", 30.0),
            max_file_bytes=max_bytes,
            max_collection_files=int(_env_float("QMD_MAX_COLLECTION_FILES", DEFAULT_MAX_COLLECTION_FILES)),
            max_collection_mb=int(_env_float("QMD_MAX_COLLECTION_MB", DEFAULT_MAX_COLLECTION_MB)),
            database_url=os.environ.get("QMD_DATABASE_URL") or None,
        )
