"""A dict-backed `models.cache.LLMCache` that counts hits, so a test can prove a cache was read
(the index's own caches, store/llm_cache.py, keep no count)."""


class MemoryCache:
    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.hits = 0

    def get(self, key: str) -> str | None:
        value = self.data.get(key)
        self.hits += value is not None
        return value

    def put(self, key: str, value: str) -> None:
        self.data[key] = value
