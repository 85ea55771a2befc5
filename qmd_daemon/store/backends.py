"""Which engine holds the index: `index.yml` `backend: sqlite` (the default, one local file) or
`backend: postgres` (a shared server named by `database_url:` or QMD_DATABASE_URL). The layers
above store/ get a Backend and talk to its protocols only.

A PostgreSQL backend package (`qmd_daemon.store.postgres`) provides
`open_backend(database_url: str, settings: Settings) -> Backend`; it is imported only when
index.yml asks for it, so a SQLite install never loads its driver.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qmd_daemon import secret_mask
from qmd_daemon.config import IndexConfig
from qmd_daemon.errors import ConfigError, QmdError, UsageError
from qmd_daemon.settings import Settings
from qmd_daemon.store.connection import user_error
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.llm_cache import SqliteLLMCache
from qmd_daemon.store.protocols import (
    ChunkStore,
    CollectionHomes,
    StaticVectorStore,
    StoredLLMCache,
    VectorStore,
)
from qmd_daemon.store.static_vectors import StaticVectors
from qmd_daemon.store.vectors import VectorIndex


@dataclass
class Backend:
    """One open index. `vectors(quantization)` gives its vector store (None: this index cannot
    hold vectors, e.g. a SQLite build that cannot load sqlite-vec); `static` the static tier's
    vectors (None: not kept by this index)."""

    chunks: ChunkStore
    vectors: Callable[[str], VectorStore] | None
    llm_cache: StoredLLMCache
    location: str  # where the index lives, for `status` (a file; a server and database, no password)
    static: StaticVectorStore | None = None
    no_vectors: str = "sqlite-vec could not be loaded by this Python's SQLite"  # why, when vectors is None
    # which homes list each collection: a shared index's (PostgreSQL); None: one home (SQLite)
    homes: CollectionHomes | None = None

    def close(self) -> None:
        self.chunks.close()


def open_sqlite(settings: Settings) -> Backend:
    store = IndexStore(settings.index_path)

    def vectors(quantization: str) -> VectorStore:
        return VectorIndex(store, quantization=quantization)

    return Backend(
        store, vectors if store.supports_vectors else None, SqliteLLMCache(store), str(settings.index_path),
        StaticVectors(store),
    )


def open_backend(settings: Settings) -> Backend:
    config = IndexConfig.load(settings.config_file)
    if config.backend() == "sqlite":
        return open_sqlite(settings)
    url = configured_url(config, settings)
    if not url:
        raise ConfigError(
            f"{config.path}: backend: postgres needs database_url (or QMD_DATABASE_URL in the environment)"
        )
    # a database_url alone means postgres (config.backend): say so, or the user looks for a
    # `backend:` line that is not there
    said = "backend: postgres" if config.raw.get("backend") else (
        "database_url without a backend: line, which means backend: postgres (`backend: sqlite` keeps "
        "the local file)"
    )
    backend: Backend = _postgres(f"{config.path} says {said}").open_backend(url, settings)
    return backend


def configured_url(config: IndexConfig, settings: Settings) -> str | None:
    """The server index.yml's `database_url:` or QMD_DATABASE_URL names (the file first). Its
    password is masked from then on (secret_mask.remember): a URL edited into index.yml while a
    daemon runs is masked as soon as the daemon reads it, and the old one stays masked too."""
    url = config.database_url() or settings.database_url
    if url:
        secret_mask.remember(url)
    return url


def _postgres(why: str) -> Any:
    """The PostgreSQL backend package, loaded on demand; one line when its extra is missing."""
    try:
        return importlib.import_module("qmd_daemon.store.postgres")
    except ModuleNotFoundError as exc:
        missing = "the PostgreSQL backend" if exc.name == "qmd_daemon.store.postgres" else exc.name
        raise ConfigError(
            f"{why}, but {missing} is not installed (pip install 'qmd-daemon[postgres]')"
        ) from None


def copy_to_postgres(settings: Settings, database_url: str | None, progress: bool | None) -> dict[str, Any]:
    """`qmd-daemon migrate --to postgres`: copy this home's local SQLite index into the PostgreSQL
    database DATABASE_URL names, else the one index.yml or QMD_DATABASE_URL names
    (store/postgres/migrate.py); the caller holds the writer lock. The source is the local file
    whatever `backend:` says, so index.yml may already point at the server (docs/postgres.md
    names the server once, and the password stays off the command line)."""
    url = database_url or configured_url(IndexConfig.load(settings.config_file), settings)
    if not url:
        raise UsageError(
            "migrate needs the server: --database-url URL, index.yml database_url or QMD_DATABASE_URL"
        )
    copy = _postgres("migrate --to postgres").copy_sqlite_index
    source = open_sqlite(settings)
    try:
        report: dict[str, Any] = copy(source.chunks, url, progress)
    finally:
        source.close()
    return report


def mask_configured(settings: Settings) -> bool:
    """Start masking the configured PostgreSQL password now (secret_mask: every log record of
    this process, and the daemon's error bodies), before anything else runs: what each entry
    point calls first. False when no server is configured (a local index has no password) or
    index.yml cannot be read (the command says so on its own; a URL it cannot read is not in
    use)."""
    try:
        return configured_url(IndexConfig.load(settings.config_file), settings) is not None
    except ConfigError:
        return False


def storage_error(exc: BaseException) -> QmdError | None:
    """The one line a front end prints for a driver error that reached it; None when `exc` is
    no storage error (a backend maps its own errors where it can; this is the last net)."""
    return user_error(exc)
