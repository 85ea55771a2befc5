"""LexicalQuery -> a tree of FTS5 phrases over FTS5's own tokens (store/fts_tokens.py), and its tsquery.

PostgreSQL's GIN index finds the candidate rows with the tsquery; ranking.py then decides, as FTS5
does, which phrases occur (a phrase lies inside one column: weights A/B/C are path/symbols/body)
and computes FTS5's bm25() in the same statement.
"""

from __future__ import annotations

from dataclasses import dataclass

from qmd_daemon.errors import QueryRejected
from qmd_daemon.store.fts_tokens import query_tokens
from qmd_daemon.store.lexical_query import AllOf, LexicalQuery, Phrase, Without, Word
from qmd_daemon.text.cjk import run_pairs, without_cjk

COLUMN_LABELS = ("A", "B", "C")  # tsvector weights of path, symbols, body


@dataclass(frozen=True)
class Seq:
    """One FTS5 phrase: tokens at consecutive positions of one column (`column`: only that one)."""

    tokens: tuple[str, ...]
    column: str | None = None


@dataclass(frozen=True)
class Op:
    kind: str  # "and", "or", "not" (parts[0] without parts[1])
    parts: tuple[Node, ...]


Node = Seq | Op


def _phrase(text: str, column: str | None) -> Node | None:
    """TEXT as FTS5 matches a quoted string; CJK runs by their character pairs in order (the index
    holds them, text/cjk.py), each run a phrase of its own, with the other words."""
    pairs = run_pairs(text)
    if not pairs:
        tokens = query_tokens(text)
        return Seq(tokens, column) if tokens else None
    groups = [Seq(tuple(t for pair in run for t in query_tokens(pair)), column) for run in pairs]
    groups += [Seq(query_tokens(w), column) for w in without_cjk(text) if query_tokens(w)]
    return groups[0] if len(groups) == 1 else Op("and", tuple(groups))


def compile_query(query: LexicalQuery, column: str | None = None) -> Node:
    """The tree with its texts tokenized; raises QueryRejected when nothing is left to match."""
    node = _compile(query, column)
    if node is None:
        raise QueryRejected("the keyword query has no word to match")
    return node


def _compile(query: LexicalQuery, column: str | None) -> Node | None:
    if isinstance(query, Word | Phrase):
        return _phrase(query.text, column)
    if isinstance(query, Without):
        keep, drop = _compile(query.keep, column), _compile(query.drop, column)
        if keep is None:
            return None
        return keep if drop is None else Op("not", (keep, drop))
    parts = tuple(p for p in (_compile(q, column) for q in query.parts) if p is not None)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else Op("and" if isinstance(query, AllOf) else "or", parts)


def _lexeme(token: str, column: str | None) -> str:
    quoted = "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"
    return f"{quoted}:{column}" if column else quoted


def tsquery(node: Node) -> str:
    """The tsquery text of the tree: a superset of FTS5's matches (`<->` may cross columns, so a
    NOT of a longer phrase is left to the positions: its `!` would drop rows FTS5 keeps)."""
    if isinstance(node, Seq):
        return "(" + " <-> ".join(_lexeme(t, node.column) for t in node.tokens) + ")"
    if node.kind == "not":
        keep, drop = node.parts
        if any(len(seq.tokens) > 1 for seq in phrases(drop)):
            return tsquery(keep)
        return f"({tsquery(keep)} & !{tsquery(drop)})"
    joiner = " & " if node.kind == "and" else " | "
    return "(" + joiner.join(tsquery(p) for p in node.parts) + ")"


def phrases(node: Node) -> list[Seq]:
    """Every phrase of the query in order, repeats included: FTS5's bm25 sums over them all."""
    if isinstance(node, Seq):
        return [node]
    return [seq for part in node.parts for seq in phrases(part)]


def lexemes(node: Node) -> list[str]:
    return sorted({t for seq in phrases(node) for t in seq.tokens})
