"""One psycopg connection to a PostgreSQL index, shared by the backend's stores, with the driver's
errors mapped to the project's, so nothing above store/ imports psycopg.

A server that restarted or dropped the connection (failover, terminated backend) is reconnected on
the next statement outside a transaction: each such statement stands alone, so running it again is
safe. A statement inside a transaction is never replayed: the transaction fails whole and rolls
back. A server that cannot be reached is one IndexDatabaseError line naming host and database,
never the password.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import conninfo

from qmd_daemon import secret_mask
from qmd_daemon.errors import IndexDatabaseError, QueryRejected


def describe(url: str) -> str:
    """The server and database a URL names, without its password (error messages, status)."""
    try:
        parts = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise IndexDatabaseError(f"not a PostgreSQL URL ({redacted(_first_line(exc), url)})") from None
    host = str(parts.get("host") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    where = f"postgresql {parts.get('user') or ''}@{host}{port}/{parts.get('dbname') or ''}"
    return redacted(where, url)  # a password mistyped into the user or host field stays hidden


def redacted(text: str, url: str) -> str:
    """TEXT with the password URL holds masked as `***`, whichever form URL takes (keyword or
    URL, percent-encoded or quoted), every other password this process read (secret_mask), and
    any other password a connection string in TEXT spells. Every PostgreSQL error and every
    printed server passes through it."""
    parsed = ""
    with contextlib.suppress(psycopg.Error):  # a URL libpq cannot parse: its raw spellings go
        parsed = str(conninfo.conninfo_to_dict(url).get("password") or "")
    secret_mask.remember(url, parsed)
    return secret_mask.mask(text)


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
                    f"cannot reach the index database ({self.where}): {self.first_line(exc)}"
                ) from None
        return self._conn

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    def _lost(self) -> bool:
        return self._conn is None or self._conn.closed or self._conn.broken

    @contextmanager
    def translated(self) -> Iterator[None]:
        """Driver errors as the project's: a query the server refuses is QueryRejected; a lost
        connection or a broken schema is IndexDatabaseError (the transaction was rolled back).
        Every message passes through `redacted`: a server's or driver's text may quote a
        connection string, and the password in it would reach the terminal, the daemon's log
        and an MCP client."""
        try:
            yield
        except (psycopg.errors.SyntaxError, psycopg.errors.QueryCanceled) as exc:
            raise QueryRejected(f"the index database refused the query: {self.first_line(exc)}") from exc
        except psycopg.OperationalError as exc:
            raise IndexDatabaseError(
                f"lost the index database ({self.where}): {self.first_line(exc)}; nothing of the "
                "unfinished change was kept, run it again"
            ) from exc
        except psycopg.Error as exc:
            raise IndexDatabaseError(f"index database error ({self.where}): {self.first_line(exc)}") from exc

    def first_line(self, exc: BaseException) -> str:
        """The first line of a driver error, its password masked (this database's, or any a
        connection string in it spells)."""
        return redacted(_first_line(exc), self.url)

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> psycopg.Cursor[Any]:
        """Run one statement; outside a transaction a lost connection is reopened and the
        statement run once more."""
        with self.translated():
            try:
                return self.connection().execute(sql, params)  # type: ignore[arg-type]
            except psycopg.OperationalError:
                if self._depth or not self._lost():
                    raise
            self._conn = None
            return self.connection().execute(sql, params)  # type: ignore[arg-type]

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Run one statement per row (pipelined); returns the rows it changed."""
        if not rows:
            return 0
        with self.translated(), self.connection().cursor() as cursor:
            cursor.executemany(sql, rows)  # type: ignore[arg-type]
            return max(cursor.rowcount, 0)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside lands together or not at all (nested calls join the outer one). A
        connection lost earlier is opened anew first, so the retry of a failed update just works."""
        if self._depth == 0 and self._lost():
            self._conn = None
        with self.translated(), self.connection().transaction():
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
        self._commits += self._depth == 0

    def data_state(self) -> tuple[int, int]:
        """Changes when the data may have: the server's next transaction id moves with every
        commit that wrote (any connection), the local count with this connection's own."""
        row = self.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()
        return int(row[0]) if row else 0, self._commits

    def advisory_lock(self, *key: int) -> None:
        """Hold lock KEY until this transaction ends: writers of the same thing take turns across
        machines."""
        marks = ", ".join(["%s"] * len(key))
        self.execute(f"SELECT pg_advisory_xact_lock({marks})", key)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
