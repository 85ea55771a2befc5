"""store/fts_tokens.py against the index's own FTS5 table: the PostgreSQL backend indexes these
tokens and the term counts are FTS5's, so a tokenizer that drifted from chunks_fts's (a changed
schema, another SQLite build) would be a word one backend finds and the other does not."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from qmd_daemon.store.fts_tokens import index_tokens, query_tokens, query_tokens_of, texts_tokens
from qmd_daemon.store.index_store import IndexStore

REPO = Path(__file__).resolve().parents[2]


def indexed_tokens(tmp_path: Path, texts: list[str]) -> list[list[str]]:
    """Each text's tokens as the index's chunks_fts holds them in its body column, in order."""
    store = IndexStore(tmp_path / "index.sqlite")
    try:
        conn = store.conn
        conn.executemany(
            "INSERT INTO chunks_fts (rowid, collection, path, symbols, body) VALUES (?, '', '', '', ?)",
            list(enumerate(texts, start=1)),
        )
        conn.execute("CREATE VIRTUAL TABLE temp.instances USING fts5vocab(main, chunks_fts, 'instance')")
        out: list[list[str]] = [[] for _ in texts]
        for doc, term in conn.execute("SELECT doc, term FROM temp.instances ORDER BY doc, offset"):
            out[doc - 1].append(term)
        return out
    finally:
        store.close()


def test_every_source_file_of_the_repository_tokenizes_as_the_index_does(tmp_path: Path) -> None:
    files = sorted(
        p for folder in ("qmd_daemon", "tests", "docs", "bench", "clients")
        for p in (REPO / folder).rglob("*") if p.suffix in {".py", ".md", ".sh", ".ps1", ".yml"}
    )
    texts = [p.read_text(encoding="utf-8") for p in files]
    assert len(texts) > 150
    expected = indexed_tokens(tmp_path, texts)
    differing = [str(p.relative_to(REPO)) for p, text, want in zip(files, texts, expected, strict=True)
                 if index_tokens(text) != want]
    assert differing == []


@pytest.mark.parametrize(
    "text",
    [
        "ies sses eed ed ing yes dies",  # a token that is a whole suffix
        "Größe große café CAFÉ naïve İstanbul µs Ωmega",  # folding, one diacritic dropped
        "Tiếng Việt ệ ở Tie\u0302\u0301ng cafe\u0301",  # two diacritics kept; decomposed dropped
        "データベース接続の設定 返回JSON格式 ήταν إختبار 한국어 2006년 🦀 rust",
        "a-b.c/d::e (f) [g] {h} 'i' \"j\" k\tl\nm",
        "x" * 70 + "ing " + "y" * 62 + "ing",  # past 64 bytes: not stemmed
    ],
)
def test_edge_cases_tokenize_as_the_index_does(tmp_path: Path, text: str) -> None:
    assert index_tokens(text) == indexed_tokens(tmp_path, [text])[0]


def test_stems_are_martin_porters_own() -> None:
    # FTS5 follows Porter's own version of his algorithm, not Snowball's "porter" (`possibli`)
    assert index_tokens("possibly parsing parsers getUserName __init__ agreed") == [
        "possibl", "pars", "parser", "getusernam", "__init__", "agre",
    ]
    assert index_tokens("") == [] == index_tokens("!!! ... ---")


def test_many_texts_tokenize_at_once_as_each_alone() -> None:
    texts = ["possibly parsing", "", "!!! ...", "getUserName", "possibly parsing", "a-b.c/d::e"]
    assert texts_tokens(texts) == [index_tokens(t) for t in texts]
    assert query_tokens_of(texts) == {t: tuple(index_tokens(t)) for t in texts}
    assert query_tokens_of(["parsers"])["parsers"] == query_tokens("parsers") == ("parser",)


def test_each_thread_tokenizes_on_its_own_connection() -> None:
    # the daemon tokenizes on its reader and writer threads; a SQLite connection may not cross them
    results: list[list[str]] = []
    threads = [threading.Thread(target=lambda: results.append(index_tokens("running tests")))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [["run", "test"]] * 4
