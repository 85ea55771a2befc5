"""chunks_matching's two ways (one MATCH filtered here, or the MATCH run per id) answer the same,
and a word whose postings cost less than the per-id lookups is read once. Real index of this
repository's search and store code."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from qmd_daemon.search.lexical import term_query
from qmd_daemon.store import index_store
from qmd_daemon.store.lexical_query import LexicalQuery, Phrase

REPO = Path(__file__).resolve().parents[2]


def _matching(store: Any, query: LexicalQuery, ids: list[int]) -> tuple[set[int], list[str]]:
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        return store.chunks_matching(query, ids), [s for s in statements if "MATCH" in s]
    finally:
        store.conn.set_trace_callback(None)


def test_both_ways_agree_and_a_rare_word_is_read_once(
    engine: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(REPO / "qmd_daemon" / "search", tmp_path / "code" / "search")
    shutil.copytree(REPO / "qmd_daemon" / "store", tmp_path / "code" / "store")
    name = engine.add_collection(tmp_path / "code").name
    engine.update([name], progress=False)
    store = engine.store
    ids = [int(r[0]) for r in store.conn.execute("SELECT id FROM chunks ORDER BY id")][::3]
    queries = [term_query(t) for t in ("chunk", "chunks_matching", "rowid", "SeekPostings", "zzqx")]
    queries.append(Phrase("rowid IN"))
    answers = []
    for seek_postings in (0, 10**9):  # always per id; always one MATCH when it can
        monkeypatch.setattr(index_store, "SEEK_POSTINGS", seek_postings)
        answers.append([_matching(store, q, ids)[0] for q in queries])
    assert answers[0] == answers[1]
    assert any(answers[0]) and not answers[0][4]
    monkeypatch.undo()
    found, statements = _matching(store, term_query("rowid"), ids)
    assert found and len(statements) == 1 and "IN (" not in statements[0]
    _, statements = _matching(store, Phrase("rowid IN"), ids)
    assert "IN (" in statements[0], "a phrase's cost is not counted: per id"
