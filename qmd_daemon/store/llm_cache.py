"""The LLM result cache (rerank scores, query expansions) kept in the index database."""

from __future__ import annotations

import time

from qmd_daemon.store.index_store import IndexStore


class SqliteLLMCache:
    """`models.cache.LLMCache` over the `llm_cache` table; keys already include the model."""

    def __init__(self, store: IndexStore):
        self.store = store

    def get(self, key: str) -> str | None:
        row = self.store.conn.execute("SELECT value FROM llm_cache WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        self.store.conn.execute(
            "INSERT OR REPLACE INTO llm_cache (key, value, created_at) VALUES (?, ?, ?)",
            (key, value, time.time()),
        )

    def entries(self) -> int:
        """Stored results (rerank scores and expansions of every model), for `status`."""
        return int(self.store.conn.execute("SELECT count(*) FROM llm_cache").fetchone()[0])
