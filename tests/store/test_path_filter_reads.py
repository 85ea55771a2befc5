"""The reads a --path filter adds to the store contract (file_paths, chunks_of_files, fts_search
limited to files) answer the same on SQLite and PostgreSQL: this repository's own source indexed
into both through the real indexer."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from qmd_daemon.config import CollectionConfig
from qmd_daemon.ingest.indexer import update_collection
from qmd_daemon.settings import Settings
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.lexical_query import AnyOf, Phrase, Word
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase

REPO = Path(__file__).resolve().parents[2]
WEIGHTS = (2.0, 4.0, 1.0)


@pytest.fixture
def both(home: Path, tmp_path: Path, postgres_url: str) -> Any:
    root = tmp_path / "corpus"
    for source in ("qmd_daemon/store", "qmd_daemon/search"):
        shutil.copytree(REPO / source, root / source, ignore=shutil.ignore_patterns("__pycache__"))
    stores = (IndexStore(tmp_path / "index.sqlite"), PostgresChunkStore(PostgresDatabase(postgres_url)))
    for store in stores:
        update_collection(store, CollectionConfig("repo", root), Settings.from_env(), progress=False)
    yield stores
    for store in stores:
        store.close()


def _files(store: Any) -> dict[str, int]:
    """Path -> file id of the collection, as file_paths gives them."""
    return {path: file_id for file_id, path in store.file_paths([store.collection_id("repo")])}


def _places(store: Any, ids: list[int]) -> list[tuple[str, int]]:
    return sorted((row.path, row.start_line) for row in store.chunks_by_ids(ids).values())


def test_keyword_search_among_files_ranks_as_the_whole_search_does_within_them(both: Any) -> None:
    lite, pg = both
    assert _files(pg).keys() == _files(lite).keys() and len(_files(lite)) > 30
    assert lite.file_paths([]) == pg.file_paths([]) == []
    queries = (Word("collection"), AnyOf((Word("vector"), Word("bm25"))), Phrase("chunk ids"))
    # a folder (half the files: SQLite filters the unfiltered best), one file (it joins every
    # match), and every file but those of the best matches (the unfiltered best hold too few)
    choices: list[Any] = [lambda p, top: p.startswith("qmd_daemon/store/"),
                          lambda p, top: p == "qmd_daemon/search/lexical.py",
                          lambda p, top: p not in top]
    for query in queries:
        for chosen in choices:
            answers = []
            for store in (lite, pg):
                cid, files = store.collection_id("repo"), _files(store)
                whole = store.fts_search(query, [cid], 10_000, WEIGHTS)
                rows = store.chunks_by_ids([c for c, _ in whole])
                top = {rows[c].path for c, _ in whole[:20]}
                allowed = {i for p, i in files.items() if chosen(p, top)}
                within = [(c, s) for c, s in whole if rows[c].file_id in allowed]
                found = store.fts_search(query, [cid], 10_000, WEIGHTS, allowed)
                assert found == within and len(within) < len(whole)  # same BM25 and order, those files only
                assert store.fts_search(query, [cid], 3, WEIGHTS, allowed) == within[:3]
                assert store.fts_search(query, [cid], 10, WEIGHTS, set()) == []
                answers.append([(rows[c].path, rows[c].start_line, s) for c, s in found])
            # the same places in the same order, the same BM25 to 1e-9 relative (both compute FTS5's
            # formula in doubles; rounding to 9 decimals split 1.5625e-06 into .562 and .563)
            assert [a[:2] for a in answers[0]] == [a[:2] for a in answers[1]] != []
            assert [a[2] for a in answers[0]] == pytest.approx([a[2] for a in answers[1]], rel=1e-9)


def test_chunks_of_files_are_those_files_chunks_up_to_the_limit(both: Any) -> None:
    lite, pg = both
    wanted = ["qmd_daemon/search/lexical.py", "qmd_daemon/store/schema.py"]
    places = []
    for store in (lite, pg):
        files = _files(store)
        ids = store.chunks_of_files([files[p] for p in wanted], 10_000)
        assert {row.path for row in store.chunks_by_ids(ids).values()} == set(wanted)
        assert len(store.chunks_of_files([files[p] for p in wanted], 3)) == 3
        places.append(_places(store, ids))
    assert places[0] == places[1]
