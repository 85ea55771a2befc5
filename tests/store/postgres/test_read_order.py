"""Reads whose order (or whose LIMIT's cut) the search depends on answer alike on both backends:
the same rows in the same order, not merely the same set (tests/store/test_store_contract.py
compares sorted answers). Found by running the dev sets through both backends call by call
(docs/postgres.md "Parity on today's code (session 23)")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from qmd_daemon.config import CollectionConfig
from qmd_daemon.ingest.indexer import update_collection
from qmd_daemon.search.lexical import named_files_search
from qmd_daemon.search.query import parse_query
from qmd_daemon.settings import Settings
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.postgres.chunk_store import PostgresChunkStore
from qmd_daemon.store.postgres.connection import PostgresDatabase

INDEX_FILES = 60  # more files named `index` than chunks_of_files_named returns (50)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """60 packages with an `index.py` each (every one defining `render`, the odd ones `Render`
    too), then `zz/router.py`, the one file named `router`, which also defines `alpha` and
    which 8 guides cite."""
    root = tmp_path / "corpus"
    (root / "docs").mkdir(parents=True)
    for i in range(8):
        (root / "docs" / f"guide{7 - i}.md").write_text(
            f"# Guide {i}\n\nRoutes live in zz/router.py.\n", encoding="utf-8")
    for i in range(INDEX_FILES):
        package = root / f"pkg{i:02d}"
        package.mkdir(parents=True)
        extra = "\n\nclass Render:\n    pass\n" if i % 2 else ""
        (package / "index.py").write_text(
            f"def render(page):\n    return page.index_{i}\n{extra}", encoding="utf-8")
    (root / "zz").mkdir()
    (root / "zz" / "router.py").write_text(
        "def alpha(route):\n    return route\n\n\ndef route_index(router, pages):\n"
        "    return router.pages[pages]\n",
        encoding="utf-8",
    )
    return root


@pytest.fixture
def both(corpus: Path, home: Path, tmp_path: Path, postgres_url: str) -> Iterator[tuple[Any, Any]]:
    """(sqlite store, postgres store), each holding the corpus as collection `repo`, written in
    the same order (so their ids are the same)."""
    lite = IndexStore(tmp_path / "index.sqlite")
    pg = PostgresChunkStore(PostgresDatabase(postgres_url))
    try:
        for store in (lite, pg):
            update_collection(store, CollectionConfig("repo", corpus), Settings.from_env(), progress=False)
        yield lite, pg
    finally:
        lite.close()
        pg.close()


def _paths(store: Any, chunk_ids: list[int]) -> list[str]:
    rows = store.chunks_by_ids(chunk_ids)
    return [rows[i].path for i in chunk_ids]


def test_files_named_are_the_first_fifty_by_file_id_on_both(both: tuple[Any, Any]) -> None:
    """Past the cut of 50 files, which ones come back was the plan's order: SQLite's GROUP BY
    gives file id order, PostgreSQL's too while it sorts to group (its estimate of the regex's
    rows is small), but a hash aggregate (a plan without the sort: `enable_sort` off stands in
    for a larger estimate) gave any 50, so `router.py` (the last file written) was among a
    question's named files on one backend only."""
    both[1].db.execute("SET enable_sort = off")
    answers = []
    for store in both:
        cid = store.collection_id("repo")
        found = store.chunks_of_files_named(["index", "router"], [cid])
        ids = [store.chunks_by_ids([c])[c].file_id for c in found]
        assert ids == sorted(ids), "in file id order"
        assert len(found) == 50
        answers.append(_paths(store, found))
    assert answers[0] == answers[1]
    assert "zz/router.py" not in answers[0]  # the 51st file by id


def test_named_files_search_answers_alike(both: tuple[Any, Any]) -> None:
    """The product's named-files pass over that read (search/lexical.py): the same hits."""
    both[1].db.execute("SET enable_sort = off")
    hits = []
    for store in both:
        parsed = parse_query("router index pages")
        found = named_files_search(store, parsed, [store.collection_id("repo")])
        hits.append([(h.chunk_id, round(h.score, 9)) for h in found])
    assert hits[0] == hits[1]


def test_definitions_come_in_chunk_and_line_order_on_both(both: tuple[Any, Any]) -> None:
    """chunks_defining's rows in chunk id, line, name order: `_resolve_defined_word` takes the
    first case found. SQLite answered in the name index's order (case-folded name, then rowid),
    PostgreSQL in its heap's: `alpha` (the last file's) came first on one, last on the other."""
    answers = []
    for store in both:
        rows = store.chunks_defining(["render", "ALPHA"], [store.collection_id("repo")])
        assert len(rows) == INDEX_FILES + INDEX_FILES // 2 + 1
        placed = [(store.chunks_by_ids([c])[c].path, name, kind) for c, name, kind in rows]
        answers.append(placed)
        lines = store.definitions_in([c for c, _, _ in rows])
        keys = [(c, dict(lines[c])[name], name) for c, name, _ in rows]
        assert keys == sorted(keys)
    assert answers[0] == answers[1]
    assert answers[0][-1] == ("zz/router.py", "alpha", "function")


def test_related_files_come_in_path_order_on_both(both: tuple[Any, Any]) -> None:
    """A hit shows its first 5 related files: SQLite's UNION gave them in path order,
    PostgreSQL's (a hash, as `enable_sort` off forces here) any 5 of the 8 guides."""
    both[1].db.execute("SET enable_sort = off")
    answers = []
    for store in both:
        router = store.file_states(store.collection_id("repo"))["zz/router.py"].id
        related = store.related_paths([router])[router]
        assert related == sorted(related) and len(related) == 8
        answers.append(related)
    assert answers[0] == answers[1]
