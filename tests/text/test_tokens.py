"""text/tokens.py against FTS5 itself: the PostgreSQL backend indexes these tokens, so any
difference is a word one backend finds and the other does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.store.connection import sqlite
from qmd_daemon.text.tokens import index_tokens, stem

REPO = Path(__file__).resolve().parents[2]
TOKENIZER = "porter unicode61 tokenchars '_'"  # store/schema.py's chunks_fts


def fts5_tokens(texts: list[str]) -> list[list[str]]:
    """Each text's tokens as FTS5 indexes them, in order (fts5vocab's instance table)."""
    conn = sqlite.connect(":memory:")
    conn.execute(f'CREATE VIRTUAL TABLE t USING fts5(body, tokenize = "{TOKENIZER}")')
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", list(enumerate(texts)))
    out: list[list[str]] = [[] for _ in texts]
    for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        out[doc].append(term)
    conn.close()
    return out


def test_every_source_file_of_the_repository_tokenizes_as_fts5_does() -> None:
    files = sorted(
        p for folder in ("qmd_daemon", "tests", "docs", "bench", "clients")
        for p in (REPO / folder).rglob("*") if p.suffix in {".py", ".md", ".sh", ".ps1", ".yml"}
    )
    texts = [p.read_text(encoding="utf-8") for p in files]
    assert len(texts) > 150
    expected = fts5_tokens(texts)
    differing = [str(p.relative_to(REPO)) for p, text, want in zip(files, texts, expected, strict=True)
                 if index_tokens(text) != want]
    assert differing == []


@pytest.mark.parametrize(
    "text",
    [
        "possibly topology incredibly agreed feeding generalization",  # Porter's own departures
        "ies sses eed ed ing yes dies",  # a token that is a whole suffix
        "get_user_name getUserName HTTPServer __init__ x2 3d",
        "Größe große café CAFÉ naïve İstanbul µs Ωmega",  # folding, one diacritic dropped
        "Tiếng Việt ệ ở",  # two diacritics kept, as in FTS5's remove_diacritics 1
        "Tie\u0302\u0301ng cafe\u0301",  # decomposed diacritics dropped inside the token
        "データベース接続の設定 返回JSON格式 ήταν إختبار 한국어 2006년",
        "a-b.c/d::e (f) [g] {h} 'i' \"j\" k\tl\nm",
        "x" * 70 + "ing " + "y" * 62 + "ing",  # past 64 bytes: not stemmed
    ],
)
def test_edge_cases_tokenize_as_fts5_does(text: str) -> None:
    assert index_tokens(text) == fts5_tokens([text])[0]


def test_each_distinct_token_is_stemmed_once() -> None:
    # Every chunk written is tokenized for its term counts (store/term_stats.py); with the stem
    # cache lost (a decorator moved to the wrong function), indexing took 3-5x as long.
    stem.cache_clear()
    assert index_tokens("parsing parsers parsing parsers") == ["pars", "parser", "pars", "parser"]
    assert stem.cache_info().misses == 2
