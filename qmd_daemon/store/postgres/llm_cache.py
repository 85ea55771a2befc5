"""The LLM result cache (rerank scores, query expansions) in the PostgreSQL index."""

from __future__ import annotations

import time

import psycopg

from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.store.postgres.connection import PostgresDatabase

# How long a put may wait on another writer's row lock before it gives the entry up.
PUT_LOCK_TIMEOUT = "100ms"


class PostgresLLMCache:
    """`models.cache.LLMCache` over the `llm_cache` table; keys already include the model."""

    def __init__(self, db: PostgresDatabase):
        self.db = db

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM llm_cache WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        """Best effort, never holding a search: when another transaction holds the key's row
        (the same result being stored elsewhere) the entry is dropped after a short wait."""
        try:
            with self.db.transaction():
                self.db.execute("SELECT set_config('lock_timeout', %s, true)", (PUT_LOCK_TIMEOUT,))
                self.db.execute(
                    """INSERT INTO llm_cache (key, value, created_at) VALUES (%s, %s, %s)
                       ON CONFLICT (key)
                       DO UPDATE SET value = EXCLUDED.value, created_at = EXCLUDED.created_at""",
                    (key, value, time.time()),
                )
        except IndexDatabaseError as exc:
            if not isinstance(exc.__cause__, psycopg.errors.LockNotAvailable):
                raise
            # the next search computes and stores it again

    def entries(self) -> int:
        """Stored results (rerank scores and expansions of every model), for `status`."""
        row = self.db.execute("SELECT count(*) FROM llm_cache").fetchone()
        return int(row[0]) if row else 0
