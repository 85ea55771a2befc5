"""The PostgreSQL backend: a team's shared index on a server the user names (docs/postgres.md).
Chunks and keyword search (chunk_store.py), vectors in pgvector (vectors.py), the static tier's
vectors (static_vectors.py), the LLM cache (llm_cache.py) and which homes list each collection
(homes.py) share one connection (connection.py) and one versioned schema (schema.py)."""

from __future__ import annotations

from qmd_daemon.settings import Settings
from qmd_daemon.store.backends import Backend
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase, redacted
from qmd_daemon.store.postgres.homes import PostgresHomes, home_identity
from qmd_daemon.store.postgres.llm_cache import PostgresLLMCache
from qmd_daemon.store.postgres.migrate import copy_sqlite_index
from qmd_daemon.store.postgres.schema import enable_pgvector
from qmd_daemon.store.postgres.static_vectors import PostgresStaticVectors
from qmd_daemon.store.postgres.vectors import PostgresVectorIndex
from qmd_daemon.store.protocols import VectorStore

__all__ = ["copy_sqlite_index", "open_backend", "redacted"]


def open_backend(database_url: str, settings: Settings) -> Backend:
    """The index on the server DATABASE_URL names (store/backends.py calls this for `backend:
    postgres`); its schema is created or migrated on first use."""
    db = PostgresDatabase(database_url)
    home = home_identity(settings.state_dir)
    try:
        chunks = PostgresChunkStore(db, home)
        no_vectors = enable_pgvector(db)
    except BaseException:
        db.close()
        raise
    chunks.supports_vectors = no_vectors is None

    def vectors(quantization: str) -> VectorStore:
        return PostgresVectorIndex(db, quantization=quantization)

    return Backend(
        chunks, vectors if no_vectors is None else None, PostgresLLMCache(db), db.where,
        PostgresStaticVectors(db), no_vectors or "", PostgresHomes(chunks, *home),
    )
