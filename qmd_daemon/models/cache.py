"""The LLM result cache interface (rerank scores, query expansions).

The index keeps the answers (store/llm_cache.py, store/postgres/llm_cache.py), so every process
reuses them. Keys are hex digests that already include the model fingerprint, so a model change never reads
stale results.
"""

from __future__ import annotations

import hashlib
from typing import Protocol


class LLMCache(Protocol):
    """Anything with string get/put."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, value: str) -> None: ...


def cache_key(*parts: str) -> str:
    """A stable key from parts joined with NUL (no part can forge another's boundary)."""
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()
