"""A LexicalQuery compiled into SQLite FTS5 MATCH syntax: the only place that writes it.

Words and phrases are quoted (so no user text is read as an operator); a phrase holding CJK is
matched by each run's character pairs, which the index holds in order (text/cjk.py), with the
phrase's other words beside them. A nested AND or OR is parenthesised; NOT binds tighter than
AND in FTS5, so only an OR kept by a NOT needs parentheses.
"""

from __future__ import annotations

from qmd_daemon.store.lexical_query import AllOf, AnyOf, LexicalQuery, Phrase, Without, Word
from qmd_daemon.text.cjk import run_pairs, without_cjk


def fts_collection_token(collection_id: int) -> str:
    """The token of a chunk's `collection` column, so FTS5 itself narrows to the searched ones."""
    return f"qmdcol{collection_id}"


def quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _phrase(text: str) -> str:
    pairs = run_pairs(text)
    if not pairs:
        return quote(text)
    groups = [quote(" ".join(run)) for run in pairs] + [quote(w) for w in without_cjk(text)]
    return groups[0] if len(groups) == 1 else "(" + " AND ".join(groups) + ")"


def _compile(query: LexicalQuery, nested: bool) -> str:
    if isinstance(query, Word):
        return quote(query.text)
    if isinstance(query, Phrase):
        return _phrase(query.text)
    if isinstance(query, AllOf | AnyOf):
        if len(query.parts) == 1:
            return _compile(query.parts[0], nested=True)
        operator = " AND " if isinstance(query, AllOf) else " OR "
        joined = operator.join(_compile(p, nested=True) for p in query.parts)
        return f"({joined})" if nested else joined
    keep = _compile(query.keep, nested=isinstance(query.keep, AnyOf | Without))
    drop = query.drop.parts if isinstance(query.drop, AnyOf) else (query.drop,)
    return f"{keep} NOT (" + " OR ".join(_compile(p, nested=True) for p in drop) + ")"


def match_expression(query: LexicalQuery) -> str:
    """QUERY as an FTS5 MATCH string."""
    return _compile(query, nested=False)


def scoped_match(query: LexicalQuery, collection_ids: list[int] | None) -> str:
    """QUERY over the chunks of the given collections only (None: of every collection)."""
    if collection_ids is None:
        return match_expression(query)
    scope = " OR ".join(fts_collection_token(i) for i in collection_ids)
    return f"collection : ({scope}) AND ({match_expression(query)})"
