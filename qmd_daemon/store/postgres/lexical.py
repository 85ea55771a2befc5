"""LexicalQuery -> a tsquery over text/tokens.py's tokens, and FTS5's BM25 over the rows it finds.

PostgreSQL's GIN index finds the candidate rows; their positions then decide, as FTS5 does, which
phrases occur (a phrase lies inside one column: weights A/B/C are path/symbols/body) and the score:
FTS5's bm25() with its k1 1.2, b 0.75, per-column weights, IDF over every row of the index and the
row length counted over all its columns (its `collection` column's one token included).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from qmd_daemon.errors import QueryRejected
from qmd_daemon.store.lexical_query import AllOf, LexicalQuery, Phrase, Without, Word
from qmd_daemon.text.cjk import run_pairs, without_cjk
from qmd_daemon.text.tokens import index_tokens

K1, B = 1.2, 0.75  # FTS5's bm25 constants (fts5_aux.c)
COLUMN_LABELS = ("A", "B", "C")  # tsvector weights of path, symbols, body
Positions = dict[str, set[tuple[int, str]]]  # lexeme -> {(position, column label)}


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
        tokens = tuple(index_tokens(text))
        return Seq(tokens, column) if tokens else None
    groups = [Seq(tuple(t for pair in run for t in index_tokens(pair)), column) for run in pairs]
    groups += [Seq(tuple(index_tokens(w)), column) for w in without_cjk(text) if index_tokens(w)]
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
    """The tsquery text of the tree (a superset of FTS5's matches: `<->` may cross columns)."""
    if isinstance(node, Seq):
        return "(" + " <-> ".join(_lexeme(t, node.column) for t in node.tokens) + ")"
    if node.kind == "not":
        return f"({tsquery(node.parts[0])} & !{tsquery(node.parts[1])})"
    joiner = " & " if node.kind == "and" else " | "
    return "(" + joiner.join(tsquery(p) for p in node.parts) + ")"


def phrases(node: Node) -> list[Seq]:
    """Every phrase of the query in order, repeats included: FTS5's bm25 sums over them all."""
    if isinstance(node, Seq):
        return [node]
    return [seq for part in node.parts for seq in phrases(part)]


def lexemes(node: Node) -> list[str]:
    return sorted({t for seq in phrases(node) for t in seq.tokens})


def instances(seq: Seq, positions: Positions) -> list[str]:
    """The column label of each occurrence of the phrase in one row."""
    found: list[str] = []
    for start, label in positions.get(seq.tokens[0], ()):
        if seq.column and label != seq.column:
            continue
        if all((start + i, label) in positions.get(t, ()) for i, t in enumerate(seq.tokens[1:], 1)):
            found.append(label)
    return found


def evaluate(node: Node, positions: Positions) -> tuple[bool, list[list[str]]]:
    """Whether one row matches as FTS5 decides, and per phrase (in `phrases()` order) the columns
    of its occurrences that FTS5's bm25 counts: only those of phrases inside sub-expressions that
    match the row (an AND or NOT that fails counts none of its phrases, as in fts5_expr.c)."""
    if isinstance(node, Seq):
        found = instances(node, positions)
        return bool(found), [found]
    results = [evaluate(part, positions) for part in node.parts]
    if node.kind == "or":
        return any(ok for ok, _ in results), [f for _, found in results for f in found]
    ok = all(r[0] for r in results) if node.kind == "and" else results[0][0] and not results[1][0]
    counted = [f for _, found in results for f in found]
    return ok, counted if ok else [[] for _ in counted]


@dataclass(frozen=True)
class IndexTotals:
    """Every row of the index: FTS5 takes IDF and average length over the whole table."""

    rows: int
    tokens: int


def idf(rows_holding: int, totals: IndexTotals) -> float:
    value = math.log((0.5 + totals.rows - rows_holding) / (0.5 + rows_holding))
    return value if value > 0 else 1e-6


def bm25(
    found: list[list[str]],
    idfs: list[float],
    row_tokens: int,
    totals: IndexTotals,
    weights: tuple[float, float, float],
) -> float:
    """FTS5's bm25() of one row, larger is better: per phrase, its occurrences (`found`, from
    evaluate()) weighted by column."""
    by_label = dict(zip(COLUMN_LABELS, weights, strict=True))
    average = totals.tokens / totals.rows if totals.rows else 1.0
    score = 0.0
    for labels, weight_idf in zip(found, idfs, strict=True):
        frequency = sum(by_label[label] for label in labels)
        score += weight_idf * (frequency * (K1 + 1)) / (frequency + K1 * (1 - B + B * row_tokens / average))
    return score
