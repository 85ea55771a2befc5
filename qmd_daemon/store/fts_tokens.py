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
from functools import lru_cache
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
    conn = _scratch()
    with conn:
        conn.execute("INSERT INTO words (rowid, text) VALUES (1, ?)", (text,))
        tokens = [row[0] for row in conn.execute("SELECT term FROM word_instances ORDER BY offset")]
        conn.execute("INSERT INTO words (words) VALUES ('delete-all')")
    return tokens


@lru_cache(maxsize=16384)
def query_tokens(text: str) -> tuple[str, ...]:
    """index_tokens of a query's word or phrase, remembered: a bug report asks for 40 words'
    counts, each 50-70 us through SQLite, and the same words come back in the next question."""
    return tuple(index_tokens(text))
