"""A small HTTP client with retries, timeouts and a shared connection pool."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass
class RetryPolicy:
    """How often and how long to wait between attempts (exponential backoff with jitter)."""

    attempts: int = 4
    base_delay: float = 0.2
    max_delay: float = 5.0
    jitter: float = 0.1

    def delay(self, attempt: int) -> float:
        """Seconds to sleep before attempt number `attempt` (1-based)."""
        raw = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return raw + random.uniform(0, self.jitter * raw)


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        import json

        return json.loads(self.body.decode("utf-8"))


@dataclass
class HttpClient:
    """Sends requests, retrying transient failures according to `policy`."""

    base_url: str
    timeout: float = 10.0
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    default_headers: dict[str, str] = field(default_factory=dict)

    def _build(self, method: str, path: str, body: bytes | None, headers: dict[str, str] | None) -> Request:
        merged = {**self.default_headers, **(headers or {})}
        return Request(self.base_url.rstrip("/") + "/" + path.lstrip("/"), data=body, headers=merged,
                       method=method)

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> Response:
        """Send one request; 429/5xx and network errors are retried with backoff."""
        last_error: Exception | None = None
        for attempt in range(1, self.policy.attempts + 1):
            try:
                with urlopen(self._build(method, path, body, headers), timeout=self.timeout) as raw:
                    return Response(raw.status, dict(raw.headers), raw.read())
            except HTTPError as exc:
                if exc.code not in RETRYABLE_STATUS:
                    raise
                last_error = exc
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                if retry_after and retry_after.isdigit():
                    time.sleep(float(retry_after))
                    continue
            except URLError as exc:
                last_error = exc
            if attempt < self.policy.attempts:
                time.sleep(self.policy.delay(attempt))
        raise RuntimeError(f"{method} {path} failed after {self.policy.attempts} attempts") from last_error

    def get(self, path: str, **kwargs) -> Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, body: bytes, **kwargs) -> Response:
        return self.request("POST", path, body=body, **kwargs)
