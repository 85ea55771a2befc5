"""The LLM result cache (rerank scores, query expansions) kept in the index database."""

from __future__ import annotations

import time

from qmd_daemon.store.connection import OperationalError
from qmd_daemon.store.index_store import IndexStore


class SqliteLLMCache:
    """`models.cache.LLMCache` over the `llm_cache` table; keys already include the model."""

    def __init__(self, store: IndexStore):
        self.store = store

    def get(self, key: str) -> str | None:
        row = self.store.conn.execute("SELECT value FROM llm_cache WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        """Best effort, never waiting: while another process writes the index (an update's
        transaction) the entry is dropped, not the search; SQLite would otherwise hold the search
        for its 30 s busy timeout and then fail it with "database is locked"."""
        conn = self.store.conn
        waits = conn.execute("PRAGMA busy_timeout").fetchone()[0]
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            conn.execute(
                "INSERT OR REPLACE INTO llm_cache (key, value, created_at) VALUES (?, ?, ?)",
                (key, value, time.time()),
            )
        except OperationalError:
            pass  # the next search computes and stores it again
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(waits)}")

    def entries(self) -> int:
        """Stored results (rerank scores and expansions of every model), for `status`."""
        return int(self.store.conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0])
