"""Server-side sessions kept in SQLite, with expiry and signed cookie ids."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import time

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    expires_at REAL NOT NULL
)
"""


class SessionStore:
    """Create, read and expire sessions; cookie values are `<id>.<signature>`."""

    def __init__(self, path: str, secret: bytes, ttl_seconds: int = 3600):
        self.db = sqlite3.connect(path)
        self.db.execute(SCHEMA)
        self.secret = secret
        self.ttl = ttl_seconds

    def _sign(self, session_id: str) -> str:
        return hmac.new(self.secret, session_id.encode(), hashlib.sha256).hexdigest()[:32]

    def create(self, data: dict) -> str:
        """Store `data` under a fresh random id and return the signed cookie value."""
        session_id = secrets.token_urlsafe(24)
        with self.db:
            self.db.execute("INSERT INTO sessions VALUES (?, ?, ?)",
                            (session_id, json.dumps(data), time.time() + self.ttl))
        return f"{session_id}.{self._sign(session_id)}"

    def load(self, cookie: str) -> dict | None:
        """The session data for a cookie, or None when forged, unknown or expired."""
        session_id, _, signature = cookie.partition(".")
        if not hmac.compare_digest(signature, self._sign(session_id)):
            return None
        row = self.db.execute("SELECT data, expires_at FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None or row[1] < time.time():
            return None
        return json.loads(row[0])

    def purge_expired(self) -> int:
        """Delete every expired session; returns how many were removed."""
        with self.db:
            return self.db.execute("DELETE FROM sessions WHERE expires_at < ?", (time.time(),)).rowcount
