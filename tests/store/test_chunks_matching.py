"""chunks_matching answers as the MATCH over the whole index filtered to the ids, with one MATCH
per range of neighbouring ids (never one per id, never a whole posting list). Real index of this
repository's search and store code."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from qmd_daemon.search.lexical import term_query
from qmd_daemon.store.fts5_query import match_expression
from qmd_daemon.store.index_store import MATCH_RANGE_GAP, id_ranges
from qmd_daemon.store.lexical_query import LexicalQuery, Phrase

REPO = Path(__file__).resolve().parents[2]


def _matching(store: Any, query: LexicalQuery, ids: list[int]) -> tuple[set[int], list[str]]:
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        return store.chunks_matching(query, ids), [s for s in statements if "MATCH" in s]
    finally:
        store.conn.set_trace_callback(None)


def test_id_ranges_join_neighbours_within_the_gap() -> None:
    assert id_ranges([9, 1, 3, 20, 21, 40], 2) == [(1, 3), (9, 9), (20, 21), (40, 40)]
    assert id_ranges([], 5) == []


def test_answers_as_the_whole_match_with_one_statement_a_range(engine: Any, tmp_path: Path) -> None:
    shutil.copytree(REPO / "qmd_daemon" / "search", tmp_path / "code" / "search")
    shutil.copytree(REPO / "qmd_daemon" / "store", tmp_path / "code" / "store")
    name = engine.add_collection(tmp_path / "code").name
    engine.update([name], progress=False)
    store = engine.store
    every = [int(r[0]) for r in store.conn.execute("SELECT id FROM chunks ORDER BY id")]
    # two far-apart groups of ids: one range each; and a chunk that has the query words (which
    # chunks the groups hold moves with this repository's code)
    ids = every[:40:3] + [i + 10 * MATCH_RANGE_GAP for i in every[:3]] + every[-40::3]
    with_words = store.conn.execute("SELECT min(id) FROM chunks WHERE text LIKE '%rowid%'").fetchone()[0]
    ids.append(int(with_words))
    queries = [term_query(t) for t in ("chunk", "chunks_matching", "rowid", "zzqx")] + [Phrase("rowid IN")]
    for query in queries:
        whole = {int(r[0]) for r in store.conn.execute(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (match_expression(query),))}
        found, statements = _matching(store, query, ids)
        assert found == whole & set(ids)
        assert len(statements) == len(id_ranges(ids, MATCH_RANGE_GAP))
        assert all("BETWEEN" in s and "IN (" not in s for s in statements)
    assert _matching(store, term_query("rowid"), ids)[0], "the query words are in the code"
