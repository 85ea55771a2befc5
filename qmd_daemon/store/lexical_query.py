"""A keyword query as a tree, so that the search pipeline says what to match and each store backend
compiles it into its own syntax (an FTS5 MATCH string, a PostgreSQL tsquery).

Words and phrases hold text as the user or the query analysis wrote it; a backend tokenizes and
stems it exactly as it tokenized the indexed text, so the two sides always agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Word:
    """One word: a chunk matches when it holds the word's token (after the backend's stemming)."""

    text: str


@dataclass(frozen=True)
class Phrase:
    """Text whose tokens must appear next to each other, in order."""

    text: str


@dataclass(frozen=True)
class AllOf:
    parts: tuple[LexicalQuery, ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[LexicalQuery, ...]


@dataclass(frozen=True)
class Without:
    """Chunks matching `keep` that do not match `drop`."""

    keep: LexicalQuery
    drop: LexicalQuery


LexicalQuery = Word | Phrase | AllOf | AnyOf | Without
