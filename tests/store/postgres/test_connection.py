"""Postgres-only: what a user sees when the database is unreachable, foreign or newer, and a
search after the server dropped the daemon's connection."""

from __future__ import annotations

import psycopg
import pytest

from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.store.lexical_query import Word
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase, describe, redacted


def test_an_unreachable_server_is_one_line_without_the_password(tmp_path) -> None:
    url = f"postgresql://qmd:s3cret@/qmd?host={tmp_path}"  # no server listens on this folder
    with pytest.raises(IndexDatabaseError, match="cannot reach the index database") as raised:
        PostgresChunkStore(PostgresDatabase(url))
    assert "s3cret" not in str(raised.value) and "\n" not in str(raised.value)


def test_a_database_holding_other_tables_is_refused_and_left_alone(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(IndexDatabaseError, match="not a qmd-daemon index"):
        PostgresChunkStore(PostgresDatabase(postgres_url))
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (1,)


def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    PostgresChunkStore(PostgresDatabase(postgres_url)).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(IndexDatabaseError, match="newer"):
        PostgresChunkStore(PostgresDatabase(postgres_url))


def test_a_search_after_the_server_dropped_the_connection_answers(
    postgres_url: str, postgres_server: str, tmp_path
) -> None:
    store = PostgresChunkStore(PostgresDatabase(postgres_url))
    with store.transaction():
        cid = store.ensure_collection("repo", tmp_path)
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (store.db.connection().info.backend_pid,))
    assert store.fts_search(Word("anything"), [cid], 10, (2.0, 4.0, 1.0)) == []
    assert store.collection_id("repo") == cid
    store.close()


@pytest.mark.parametrize(
    ("url", "secret", "echoed"),
    [
        # a URL's query parameter: the keyword pattern took `s3cret&sslmode=disable` as the password
        ("postgresql://qmd@db/qmd?password=s3cret&sslmode=disable", "s3cret", "auth s3cret refused"),
        # quoted keyword value with a space: only its first word was masked
        ("host=db password='two words' dbname=qmd", "two words", "auth two words refused"),
        # percent-encoded in the URL, decoded in what the driver says
        ("postgresql://qmd:s3c%40ret@db/qmd", "s3c@ret", "auth s3c@ret refused"),
        # a connection string the server quotes that is not ours (dblink, postgres_fdw)
        ("postgresql://qmd@db/qmd", "other", "dblink: host=x password=other dbname=y; postgresql://u:other@h/d"),
    ],
)
def test_every_spelling_of_a_password_is_masked(url: str, secret: str, echoed: str) -> None:
    masked = redacted(echoed, url)
    assert secret not in masked and "***" in masked
    assert secret not in describe(url)
