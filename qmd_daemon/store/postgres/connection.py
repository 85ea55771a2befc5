"""Opening a PostgreSQL database and turning the driver's errors into the project's own, so nothing
above store/ imports psycopg."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import psycopg
from psycopg import conninfo

from qmd_daemon.errors import IndexDatabaseError, QueryRejected


def describe(url: str) -> str:
    """The server and database a URL names, without its password (error messages, status)."""
    try:
        parts = conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "an unreadable database URL"
    host = str(parts.get("host") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql {parts.get('user') or ''}@{host}{port}/{parts.get('dbname') or ''}"


def connect(url: str) -> psycopg.Connection:
    """An autocommit connection: reads see the latest commit, writes go through `transaction()`."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise IndexDatabaseError(
            f"cannot reach the index database ({describe(url)}): {_first_line(exc)}"
        ) from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@contextlib.contextmanager
def translated(url: str) -> Iterator[None]:
    """Driver errors as the project's: a query the server refuses is QueryRejected; a lost
    connection or a broken schema is IndexDatabaseError (the transaction was rolled back)."""
    try:
        yield
    except (psycopg.errors.SyntaxError, psycopg.errors.QueryCanceled) as exc:
        raise QueryRejected(f"the index database refused the query: {_first_line(exc)}") from exc
    except psycopg.OperationalError as exc:
        raise IndexDatabaseError(
            f"lost the index database ({describe(url)}): {_first_line(exc)}; nothing of the unfinished "
            "change was kept, run it again"
        ) from exc
    except psycopg.Error as exc:
        raise IndexDatabaseError(f"index database error ({describe(url)}): {_first_line(exc)}") from exc
