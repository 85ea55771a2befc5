"""Postgres-only: a keyword query of words is ranked from the words' postings (chunk_terms), kept by
triggers: the same rows and the same bm25, to the last bit, as ranking from every matching chunk's
positions; an index made before the table gets its postings when it is opened. Real PostgreSQL,
real files (this repository's store and search sources)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import psycopg
import pytest

from qmd_daemon.config import CollectionConfig
from qmd_daemon.ingest.indexer import update_collection
from qmd_daemon.settings import Settings
from qmd_daemon.store.lexical_query import AllOf, AnyOf, Without, Word
from qmd_daemon.store.postgres import lexical, ranking, schema
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase
from tests.postgres_server import statistics_match_a_recount

REPO = Path(__file__).resolve().parents[3]
WEIGHTS = (2.0, 4.0, 1.0)
# the words of a bug report, as the pipeline's any-word pass asks them
REPORT = ("transaction rollback fails when the writer lock is held and the index is rewritten "
          "after a crash chunks vectors collection update statistics migration")


def _indexed(url: str, tmp_path: Path) -> PostgresChunkStore:
    root = tmp_path / "code"
    for part in ("store", "search"):
        shutil.copytree(REPO / "qmd_daemon" / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    store = PostgresChunkStore(PostgresDatabase(url))
    update_collection(store, CollectionConfig("code", root), Settings.from_env(), progress=False)
    return store


Ranked = list[tuple[int, float]]


def _both_ways(store: PostgresChunkStore, node: lexical.Node, limit: int) -> tuple[Ranked, Ranked]:
    """(from the postings, from the positions): naming every file of the index keeps the same rows
    but takes ranking.py's positions path (postings serve whole collections only)."""
    cid = store.collection_id("code")
    files = [int(r[0]) for r in store.db.execute("SELECT id FROM files").fetchall()]
    by_postings = ranking.ranked(node, [cid], limit, WEIGHTS)
    by_positions = ranking.ranked(node, [cid], limit, WEIGHTS, files)
    assert "chunk_terms" in by_postings.sql and "chunk_terms" not in by_positions.sql
    return ([tuple(r) for r in store.db.execute(by_postings.sql, by_postings.params).fetchall()],
            [tuple(r) for r in store.db.execute(by_positions.sql, by_positions.params).fetchall()])


def test_words_rank_from_their_postings_exactly_as_from_positions(
    postgres_url: str, tmp_path: Path, home: Path
) -> None:
    store = _indexed(postgres_url, tmp_path)
    try:
        queries = [
            AnyOf(tuple(Word(w) for w in REPORT.split())),  # a long report: most chunks match
            AllOf((Word("vector"), Word("search"))),
            Without(Word("index"), Word("vector")),
            AnyOf((Word("transaction"), AllOf((Word("vector"), Word("zyzzyva"))))),
        ]
        for query in queries:
            postings, positions = _both_ways(store, lexical.compile_query(query), 10_000)
            assert postings == positions and postings, query  # ids and bm25, bit for bit
    finally:
        store.close()


def test_an_index_made_before_the_postings_gets_them_when_opened(
    postgres_url: str, tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _indexed(postgres_url, tmp_path).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # back to schema 4's tables
        conn.execute("DROP TABLE chunk_terms, lexemes")
        conn.execute("DROP FUNCTION qmd_chunk_postings() CASCADE")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    store = PostgresChunkStore(PostgresDatabase(postgres_url))
    try:
        assert "from schema 4 to 5" in capsys.readouterr().err  # announced: it takes a while
        assert schema.current_version(store.db) == schema.SCHEMA_VERSION == 5
        assert statistics_match_a_recount(postgres_url)
        cid = store.collection_id("code")
        assert store.fts_search(Word("transaction"), [cid], 5, WEIGHTS)
    finally:
        store.close()


LONG = ("chunk", "collection", "token", "delete", "file", "path", "hash", "schema", "version",
        "lock", "query", "rank", "term", "stats", "store", "index", "vector", "postgres")


def test_a_long_and_is_first_asked_for_a_row_that_can_match(
    postgres_url: str, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a report's all-terms pass ANDs its ~40 words: mostly no row holds them all, and the ranking
    # statement's planning cost seconds; a match still ranks as the ranking statement says
    store = _indexed(postgres_url, tmp_path)
    try:
        cid = store.collection_id("code")
        text = store.db.execute("SELECT text FROM chunks ORDER BY length(text) DESC LIMIT 1").fetchone()[0]
        words = list(dict.fromkeys(re.findall(r"\b[a-z]{4,}\b", text)))[:17]
        held = AllOf(tuple(Word(w) for w in words))  # 17 words one chunk holds
        none = AllOf(tuple(Word(w) for w in LONG) + (Word("zebrafish"),))
        statements: list[str] = []
        run = store.db.execute

        def recorded(sql: str, params: object = None) -> object:
            statements.append(sql)
            return run(sql, params)  # type: ignore[arg-type]

        monkeypatch.setattr(store.db, "execute", recorded)
        assert store.fts_search(none, [cid], 10, WEIGHTS) == []
        assert len(statements) == 1 and statements[0].startswith("SELECT 1 FROM chunks")  # no ranking
        node = lexical.compile_query(held)
        expected = ranking.ranked(node, [cid], 10, WEIGHTS)
        found = store.fts_search(held, [cid], 10, WEIGHTS)
        ranked = run(expected.sql, expected.params).fetchall()
        assert found and found == [(int(i), float(score)) for i, score in ranked]
        assert ranking.any_candidate(lexical.compile_query(AllOf(tuple(Word(w) for w in LONG[:16]))),
                                     [cid], None) is None  # short: no pre-check
    finally:
        store.close()
