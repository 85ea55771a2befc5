"""The tokens of a text as the index's FTS5 tokenizer makes them, asked of SQLite itself.

The PostgreSQL backend must index and query exactly the terms the SQLite index holds (BM25 then
counts the same things on both), and the SQLite index keeps each token's chunk count per
collection (store/term_stats.py). Both take their tokens from an FTS5 table of the same build
and tokenizer: they agree by construction (folding, diacritics, Martin Porter's own stemmer with
FTS5's byte-length limits), and tokenizing runs in C. A Python port of the tokenizer and NLTK's
stemmer did this before: its import cost 1.45 s on a process's first search and its per-chunk
tokenizing a third of a first index's time.
"""

from __future__ import annotations

import threading
from typing import Any

from qmd_daemon.store.connection import sqlite

FTS_TOKENIZER = "porter unicode61 tokenchars '_'"  # chunks_fts's (store/schema.py)

_local = threading.local()  # a SQLite connection belongs to the thread that opened it


def _scratch() -> Any:
    """This thread's in-memory FTS5 table: contentless, so clearing it reads nothing back."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite.connect(":memory:")
        table = f"CREATE VIRTUAL TABLE words USING fts5(text, tokenize = \"{FTS_TOKENIZER}\", content = '')"
        conn.execute(table)
        conn.execute("CREATE VIRTUAL TABLE word_instances USING fts5vocab(words, 'instance')")
        _local.conn = conn
    return conn


def index_tokens(text: str) -> list[str]:
    """The tokens FTS5 indexes for TEXT, in order (a token's position is its index)."""
    return texts_tokens([text])[0]


def texts_tokens(texts: list[str]) -> list[list[str]]:
    """index_tokens of each text, all through one insert and one read of the scratch table."""
    conn = _scratch()
    tokens: list[list[str]] = [[] for _ in texts]
    with conn:
        conn.executemany("INSERT INTO words (rowid, text) VALUES (?, ?)", enumerate(texts, start=1))
        for doc, term in conn.execute("SELECT doc, term FROM word_instances ORDER BY doc, offset"):
            tokens[doc - 1].append(term)
        conn.execute("INSERT INTO words (words) VALUES ('delete-all')")
    return tokens


QUERY_TOKENS_KEPT = 16_384  # texts whose tokens are remembered before starting over
_query_tokens: dict[str, tuple[str, ...]] = {}


def query_tokens(text: str) -> tuple[str, ...]:
    """index_tokens of a query's word or phrase, remembered (query_tokens_of)."""
    return query_tokens_of([text])[text]


def query_tokens_of(texts: list[str]) -> dict[str, tuple[str, ...]]:
    """query_tokens of each text, those not remembered tokenized at once: a bug report asks for
    40 words' counts, each 50-70 us through SQLite alone, a question's feedback words 60, and the
    same words come back in the next question."""
    found = {text: _query_tokens.get(text) for text in texts}
    new = [text for text, tokens in found.items() if tokens is None]
    if new:
        if len(_query_tokens) + len(new) > QUERY_TOKENS_KEPT:
            _query_tokens.clear()
        for text, tokens in zip(new, texts_tokens(new), strict=True):
            found[text] = _query_tokens[text] = tuple(tokens)
    return {text: tokens for text, tokens in found.items() if tokens is not None}
