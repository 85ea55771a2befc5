"""The store contract: the same real collection written through the real indexer into SQLite and
into PostgreSQL, and every read method answers the same on both: each backend compiles the same
LexicalQuery trees (FTS5 MATCH syntax, tsquery)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from qmd_daemon.config import CollectionConfig
from qmd_daemon.ingest.indexer import update_collection
from qmd_daemon.settings import Settings
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.lexical_query import AllOf, AnyOf, LexicalQuery, Phrase, Without, Word
from qmd_daemon.store.postgres import lexical, ranking
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase
from tests.conftest import point_home
from tests.postgres_server import database_of_its_own, statistics_match_a_recount

REPO = Path(__file__).resolve().parents[2]
WEIGHTS = (2.0, 4.0, 1.0)  # search/lexical.py DEFAULT_WEIGHTS
# A real corpus: part of this repository's own source and docs.
SOURCES = ["qmd_daemon/store", "qmd_daemon/search", "qmd_daemon/text", "docs"]

QUERIES: list[LexicalQuery] = [
    Word("transaction"),
    AnyOf((Word("cookie"), Word("collection"))),
    AllOf((Word("vector"), Word("search"))),
    Phrase("bm25 weights"),
    Without(Word("index"), Word("vector")),
    AnyOf((Word("write_file"), AllOf((Word("write"), Word("file"))))),
    AllOf((Word("chunks"), AnyOf((Word("rederive"), Word("derived"))), Word("ranking"))),
    Word("getUserName"),
    # a row holding "vector" but not "zyzzyva": FTS5 counts no phrase of the failed AND
    AnyOf((Word("transaction"), AllOf((Word("vector"), Word("zyzzyva"))))),
    Without(Word("search"), AllOf((Word("vector"), Word("zyzzyva")))),
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for source in SOURCES:
        shutil.copytree(REPO / source, root / source, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _index(store: Any, root: Path, name: str = "repo") -> Any:
    return update_collection(store, CollectionConfig(name, root), Settings.from_env(), progress=False)


@contextmanager
def _both_holding(corpus: Path, folder: Path, url: str) -> Iterator[tuple[IndexStore, PostgresChunkStore]]:
    """(sqlite store, postgres store), each holding the corpus as collection `repo`."""
    sqlite_store = IndexStore(folder / "index.sqlite")
    pg_store = PostgresChunkStore(PostgresDatabase(url))
    try:
        for store in (sqlite_store, pg_store):
            _index(store, corpus)
        yield sqlite_store, pg_store
    finally:
        sqlite_store.close()
        pg_store.close()


@pytest.fixture
def both(corpus: Path, home: Path, tmp_path: Path, postgres_url: str) -> Iterator[Any]:
    """A pair of its own, for a test that writes to it."""
    with _both_holding(corpus, tmp_path, postgres_url) as stores:
        yield stores


@pytest.fixture(scope="module")
def read_only_pair(
    corpus: Path, tmp_path_factory: pytest.TempPathFactory, postgres_server: str
) -> Iterator[Any]:
    """One pair for the module's tests that only read: indexing the corpus twice took ~7 s a
    test, most of this file's time (CI runs near its time limit)."""
    folder = tmp_path_factory.mktemp("read-only-pair")
    with pytest.MonkeyPatch.context() as env, database_of_its_own(postgres_server) as url:
        point_home(env, folder / "qmd-home")
        with _both_holding(corpus, folder, url) as stores:
            yield stores


def _keys(store: Any, ids: list[int]) -> dict[int, tuple[str, int]]:
    """Chunk id -> (path, first line): ids differ between backends, places do not."""
    return {i: (row.path, row.start_line) for i, row in store.chunks_by_ids(list(ids)).items()}


def _placed(store: Any, rows: list[tuple[int, float]]) -> list[tuple[tuple[str, int], float]]:
    """(chunk id, score) rows as (place, score), best first."""
    keys = _keys(store, [i for i, _ in rows])
    return sorted(((keys[i], score) for i, score in rows), key=lambda r: (-round(r[1], 9), r[0]))


def _ranking(store: Any, query: LexicalQuery) -> list[tuple[tuple[str, int], float]]:
    return _placed(store, store.fts_search(query, [store.collection_id("repo")], 10_000, WEIGHTS))


def _assert_same_ranking(got: list[Any], expected: list[Any]) -> None:
    assert [k for k, _ in got] == [k for k, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-9)


@pytest.mark.parametrize("query", QUERIES, ids=[repr(q) for q in QUERIES])
def test_keyword_search_ranks_and_scores_as_fts5(read_only_pair: Any, query: LexicalQuery) -> None:
    """Same chunks, same order, same BM25 (to 1e-9 relative: both compute FTS5's formula in
    doubles from the same counts; only the summation order differs)."""
    lite, pg = read_only_pair
    expected = _ranking(lite, query)
    _assert_same_ranking(_ranking(pg, query), expected)
    cid_lite, cid_pg = lite.collection_id("repo"), pg.collection_id("repo")
    assert pg.fts_count(query, [cid_pg]) == lite.fts_count(query, [cid_lite]) == len(expected)


def test_word_counts_batch_what_fts_count_answers_word_by_word(read_only_pair: Any) -> None:
    """One statement for the one-token words, FTS5's MATCH for the rest (a phrase-like `a-b`, a
    compound), 0 for a word neither holds or the syntax rejects: fts_count's answer each time."""
    words = ["transaction", "ranking", "getusername", "write_file", "bm25", "zyzzyva", "a-b", "!!!",
             "ranking"]
    for store in read_only_pair:
        cid = store.collection_id("repo")
        counted = store.word_counts(words, [cid])
        assert set(counted) == set(words)
        for word in set(words) - {"!!!"}:
            assert counted[word] == store.fts_count(Word(word), [cid]), word
        assert counted["!!!"] == 0 == counted["zyzzyva"]
        assert counted["transaction"] > 0 and counted["write_file"] > 0
        assert store.word_counts(words, []) == dict.fromkeys(words, 0)
    lite, pg = read_only_pair
    assert lite.word_counts(words, [lite.collection_id("repo")]) == pg.word_counts(
        words, [pg.collection_id("repo")])


def test_every_read_answers_the_same(read_only_pair: Any) -> None:
    lite, pg = read_only_pair
    a, b = lite.collection_id("repo"), pg.collection_id("repo")
    drop = ("updated_at",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in pg.collection_stats()] == [
        {k: v for k, v in r.items() if k not in drop} for r in lite.collection_stats()
    ]
    assert pg.index_format(b) == lite.index_format(a)
    assert pg.indexed_paths(b) == lite.indexed_paths(a)
    assert pg.chunk_count(b) == lite.chunk_count(a) > 50
    states = {p: (s.size, s.mtime_ns, s.hash) for p, s in lite.file_states(a).items()}
    assert {p: (s.size, s.mtime_ns, s.hash) for p, s in pg.file_states(b).items()} == states
    for path in lite.indexed_paths(a):
        assert pg.file_text(b, path) == lite.file_text(a, path), path
        assert pg.defined_names(b, path) == lite.defined_names(a, path), path
    assert pg.file_text(b, "no/such/file.py") is None
    lite_files = {i: p for p, i in lite.code_files(a).items()}
    pg_files = {i: p for p, i in pg.code_files(b).items()}
    assert sorted(pg_files.values()) == sorted(lite_files.values())

    def named(files: dict[int, str], found: dict[str, set[int]]) -> dict[str, set[str]]:
        return {name: {files[i] for i in ids} for name, ids in found.items()}

    assert named(pg_files, pg.definition_files(b)) == named(lite_files, lite.definition_files(a))
    names = {"PostgresChunkStore", "write_file", "fts_search", "nonexistent_name", "indexstore"}
    assert named(pg_files, pg.definition_files(b, names)) == named(
        lite_files, lite.definition_files(a, names)
    )

    def places(store: Any, rows: list[tuple[int, str]]) -> list[tuple[tuple[str, int], str]]:
        keys = _keys(store, [i for i, _ in rows])
        return sorted((keys[i], text) for i, text in rows)

    assert places(pg, pg.doc_chunks(b)) == places(lite, lite.doc_chunks(a))
    docs = ["docs/architecture.md", "docs/usage.md"]
    assert places(pg, pg.doc_chunks_of_files(b, docs)) == places(lite, lite.doc_chunks_of_files(a, docs))
    words = ["index_store.py", "IndexStore", "bm25", "tsvector"]
    assert places(pg, pg.doc_chunks_citing(b, words)) == places(lite, lite.doc_chunks_citing(a, words))

    def links(store: Any, cid: int) -> set[tuple[tuple[str, int], str, str]]:
        files = {i: p for p, i in store.code_files(cid).items()}
        found = store.links_of(cid)
        keys = _keys(store, [d for d, _, _ in found])
        return {(keys[d], files[f], via) for d, f, via in found}

    assert links(pg, b) == links(lite, a) != set()

    def defining(store: Any, cid: int) -> list[tuple[tuple[str, int], str, str]]:
        rows = store.chunks_defining(["update_collection", "INDEXSTORE", "fts_search"], [cid])
        keys = _keys(store, [i for i, _, _ in rows])
        return sorted((keys[i], n, k) for i, n, k in rows)

    assert defining(pg, b) == defining(lite, a) != []
    names = ["update_collection", "INDEXSTORE", "fts_search", "__init__"]
    assert pg.definition_counts(names, [b]) == lite.definition_counts(names, [a])
    assert lite.definition_counts(names, [a])["IndexStore"] == len(
        {i for i, n, _ in lite.chunks_defining(names, [a]) if n == "IndexStore"}
    ) > 0

    def by_name(store: Any, cid: int) -> list[tuple[str, int]]:
        found = store.chunks_of_files_named(["lexical", "INDEX_STORE", "schema"], [cid])
        return sorted(_keys(store, found).values())

    assert by_name(pg, b) == by_name(lite, a) != []

    def per_file(store: Any, cid: int) -> tuple[dict, dict, dict]:
        ids = sorted(store.file_states(cid)[p].id for p in store.indexed_paths(cid))
        paths = {store.file_states(cid)[p].id: p for p in store.indexed_paths(cid)}
        chunk_ids = [i for i, _ in store.doc_chunks(cid)] + [
            i for i, _, _ in store.chunks_defining(["write_file", "migrate"], [cid])
        ]
        keys = _keys(store, chunk_ids)
        related = {paths[f]: sorted(p) for f, p in store.related_paths(ids).items()}
        last = {paths[f]: n for f, n in store.last_lines(ids).items()}
        defined = {keys[c]: sorted(n) for c, n in store.definitions_in(chunk_ids).items()}
        return related, last, defined

    assert per_file(pg, b) == per_file(lite, a)

    def outline_and_holders(store: Any, cid: int) -> tuple[dict, dict]:
        """signature_outline and chunks_matching: what the sibling-window rule reads."""
        paths = {store.file_states(cid)[p].id: p for p in store.indexed_paths(cid)}
        outline = store.signature_outline(list(paths))
        chunk_ids = [c for rows in outline.values() for c, _ in rows]
        keys = _keys(store, chunk_ids)
        places = {paths[f]: [(keys[c], sig) for c, sig in rows] for f, rows in outline.items()}
        holders = {
            repr(q): sorted(keys[c] for c in store.chunks_matching(q, chunk_ids))
            for q in (Word("transaction"), AllOf((Word("collection"), Word("lexical"))), Phrase("write file"))
        }
        return places, holders

    pg_outline, pg_holders = outline_and_holders(pg, b)
    lite_outline, lite_holders = outline_and_holders(lite, a)
    assert pg_outline == lite_outline and any(len(rows) > 1 for rows in lite_outline.values())
    assert pg_holders == lite_holders and all(lite_holders.values())
    assert pg.language_counts([b]) == lite.language_counts([a]) != []
    manifests = ["README.md", "ARCHITECTURE.MD", "pyproject.toml"]
    assert sorted(pg.manifest_texts([b], manifests)) == sorted(lite.manifest_texts([a], manifests)) != []


def test_an_edit_rewrites_only_what_changed_and_the_statistics_follow(both: Any, corpus: Path) -> None:
    lite, pg = both
    target = corpus / "qmd_daemon/store/lexical_query.py"
    original = target.read_text(encoding="utf-8")
    try:
        target.write_text(original.replace("class Without:", "class Excluding:") + "\n# zyzzyva\n",
                          encoding="utf-8")
        (corpus / "docs/usage.md").rename(corpus / "usage.moved")
        reports = [_index(store, corpus) for store in (lite, pg)]
        assert reports[1].as_dict() | {"seconds": 0} == reports[0].as_dict() | {"seconds": 0}
        for query in [Word("zyzzyva"), Word("Excluding"), Word("usage"), *QUERIES[:3]]:
            _assert_same_ranking(_ranking(pg, query), _ranking(lite, query))
    finally:
        target.write_text(original, encoding="utf-8")
        (corpus / "usage.moved").rename(corpus / "docs/usage.md")
    assert statistics_match_a_recount(pg.db.url)


def test_removing_a_collection_leaves_the_others_and_their_statistics(both: Any, corpus: Path) -> None:
    lite, pg = both
    for store in (lite, pg):
        _index(store, corpus / "docs", name="docs-only")
        with store.transaction():
            store.remove_collection("repo")
    assert [r["name"] for r in pg.collection_stats()] == ["docs-only"]
    assert statistics_match_a_recount(pg.db.url)
    assert _ranking(pg, Word("index")) == []  # repo is gone
    cid_lite, cid_pg = lite.collection_id("docs-only"), pg.collection_id("docs-only")
    got = pg.fts_search(Word("vector"), [cid_pg], 100, WEIGHTS)
    expected = lite.fts_search(Word("vector"), [cid_lite], 100, WEIGHTS)
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-9) != []


def test_postgres_ranks_in_the_server_and_sends_back_only_the_best_rows(
    read_only_pair: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broad any-word query matches most of the index; the server scores it and only the best
    `limit` rows cross the wire (the rows a team's index would send grow with the index)."""
    lite, pg = read_only_pair
    query = AnyOf((Word("the"), Word("index"), Word("search"), Word("chunk")))
    assert pg.fts_count(query, [pg.collection_id("repo")]) > 100
    received: list[int] = []
    run = pg.db.execute

    def counted(sql: str, params: Any = None) -> Any:
        cursor = run(sql, params)
        received.append(cursor.rowcount)
        return cursor

    cid = pg.collection_id("repo")
    monkeypatch.setattr(pg.db, "execute", counted)
    top = pg.fts_search(query, [cid], 5, WEIGHTS)
    monkeypatch.undo()
    assert received == [5], "one statement, five rows back"
    expected = lite.fts_search(query, [lite.collection_id("repo")], 5, WEIGHTS)
    assert [s for _, s in top] == pytest.approx([s for _, s in expected], rel=1e-9)
    assert sorted(_keys(pg, [i for i, _ in top]).values()) == sorted(
        _keys(lite, [i for i, _ in expected]).values()
    )


def test_excluding_a_phrase_keeps_a_row_where_its_words_only_meet_across_columns(
    home: Path, tmp_path: Path, postgres_url: str
) -> None:
    """FTS5's phrases lie inside one column; a tsquery's `<->` also matches the last word of the
    path followed by the first of the body, and its `!` must not drop a row for that."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "alpha.py").write_text("x = 1\n", encoding="utf-8")  # path "... alpha py", body "x 1"
    (root / "beta.py").write_text("y = 1\n", encoding="utf-8")
    lite = IndexStore(tmp_path / "index.sqlite")
    pg = PostgresChunkStore(PostgresDatabase(postgres_url))
    try:
        for store in (lite, pg):
            _index(store, root)
        query = Without(Word("1"), Phrase("py x"))
        expected = _ranking(lite, query)
        assert [path for (path, _), _ in expected] == ["alpha.py", "beta.py"]
        _assert_same_ranking(_ranking(pg, query), expected)
        assert pg.fts_count(query, [pg.collection_id("repo")]) == 2
    finally:
        lite.close()
        pg.close()


def test_column_filtered_phrases_rank_as_fts5_column_filters(read_only_pair: Any) -> None:
    """The ranking statement's column filters (tsvector labels A/B/C) against FTS5's own `path :`
    / `body :` filters: occurrences and rows holding the phrase are counted in that column only."""
    lite, pg = read_only_pair
    cases = [
        ('path : "lexical" OR body : "transaction"', [(Word("lexical"), "A"), (Word("transaction"), "C")]),
        ('symbols : "search" OR body : "write file"', [(Word("search"), "B"), (Phrase("write file"), "C")]),
    ]
    for match, parts in cases:
        expected = _placed(lite, lite.conn.execute(
            "SELECT rowid, -bm25(chunks_fts, 0.0, ?, ?, ?) AS score FROM chunks_fts WHERE chunks_fts MATCH ?",
            (*WEIGHTS, match),
        ).fetchall())
        node = lexical.Op("or", tuple(lexical.compile_query(q, column=c) for q, c in parts))
        statement = ranking.ranked(node, [pg.collection_id("repo")], 10_000, WEIGHTS)
        got = _placed(pg, [(int(i), float(s)) for i, s in pg.db.execute(statement.sql, statement.params)])
        assert expected, match
        _assert_same_ranking(got, expected)
