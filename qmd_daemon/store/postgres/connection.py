"""One psycopg connection to a PostgreSQL index, with the driver's errors mapped to the project's.

A server that restarted or dropped the connection is reconnected on the next statement outside a
transaction (a statement inside one is never replayed: the transaction fails whole and rolls
back). A server that cannot be reached is one IndexDatabaseError line naming host and database,
never the password.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import conninfo

from qmd_daemon.errors import IndexDatabaseError


def describe(url: str) -> str:
    """Where a URL points, for messages: user@host/dbname, without the password."""
    try:
        parts = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise IndexDatabaseError(f"not a PostgreSQL URL ({_first_line(exc)})") from None
    host = str(parts.get("host") or "localhost")
    return f"{parts.get('user') or ''}@{host}/{parts.get('dbname') or ''}".lstrip("@")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class PostgresDatabase:
    """The connection a backend's stores share, with their transaction and derived-value cache."""

    def __init__(self, url: str):
        self.url = url
        self.where = describe(url)
        self._conn: psycopg.Connection[Any] | None = None
        self._depth = 0
        self._commits = 0
        # Values derived from the data that are costly to recompute, with the data_state() they
        # were computed at (the same contract as IndexStore.derived).
        self.derived: dict[str, tuple[Any, Any]] = {}
        self.connection()

    def connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            except psycopg.Error as exc:
                raise IndexDatabaseError(
                    f"the PostgreSQL index {self.where} cannot be reached ({_first_line(exc)})"
                ) from None
        return self._conn

    def _lost(self) -> bool:
        return self._conn is None or self._conn.closed or self._conn.broken

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> psycopg.Cursor[Any]:
        """Run one statement; outside a transaction a lost connection is reopened and the
        statement run once more. Errors of the statement itself keep their psycopg type."""
        try:
            return self.connection().execute(sql, params)  # type: ignore[arg-type]
        except psycopg.OperationalError as exc:
            if not self._lost():
                raise
            if self._depth:
                raise self._mapped(exc) from None
            self._conn = None
            try:
                return self.connection().execute(sql, params)  # type: ignore[arg-type]
            except psycopg.OperationalError as again:
                raise self._mapped(again) from None

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Run one statement per row (pipelined); returns the rows it changed."""
        with self.connection().cursor() as cursor:
            try:
                cursor.executemany(sql, rows)  # type: ignore[arg-type]
            except psycopg.OperationalError as exc:
                if not self._lost():
                    raise
                raise self._mapped(exc) from None
            return max(cursor.rowcount, 0)

    def _mapped(self, exc: psycopg.Error) -> IndexDatabaseError:
        return IndexDatabaseError(
            f"the PostgreSQL index {self.where} failed ({_first_line(exc)}); the unfinished change "
            "was rolled back, run it again"
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside lands together or not at all (nested calls join the outer one)."""
        if self._depth == 0:
            self.execute("SELECT 1")  # reconnects here, before any work, when the server restarted
        try:
            with self.connection().transaction():
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
        except psycopg.OperationalError as exc:
            if not self._lost():
                raise
            raise self._mapped(exc) from None
        self._commits += self._depth == 0

    def data_state(self) -> tuple[int, int]:
        """Changes when the data may have: the server's next transaction id moves with every
        commit that wrote (any connection), the local count with this connection's own."""
        xmax = self.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()
        return int(xmax[0]) if xmax else 0, self._commits

    def advisory_lock(self, key: int) -> None:
        """Hold lock KEY until this transaction ends: writers of the same thing take turns across
        machines."""
        self.execute("SELECT pg_advisory_xact_lock(%s)", (key,))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
