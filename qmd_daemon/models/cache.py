"""The LLM result cache interface (rerank scores, query expansions).

The store provides a SQLite-backed implementation; `MemoryCache` serves tests and one-off runs.
Keys are hex digests that already include the model fingerprint, so a model change never reads
stale results.
"""

from __future__ import annotations

import hashlib
from typing import Protocol


class LLMCache(Protocol):
    """Anything with string get/put."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, value: str) -> None: ...


class MemoryCache:
    """A dict-backed LLMCache that also counts hits, which tests use to prove a cache was read."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.hits = 0

    def get(self, key: str) -> str | None:
        value = self.data.get(key)
        self.hits += value is not None
        return value

    def put(self, key: str, value: str) -> None:
        self.data[key] = value


def cache_key(*parts: str) -> str:
    """A stable key from parts joined with NUL (no part can forge another's boundary)."""
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()
