"""BM25 over chunks with FTS5: all terms first, then any term, so a query never comes back empty
just because one word is missing."""

from __future__ import annotations

import math
from dataclasses import dataclass

from qmd_daemon.ingest.cjk import run_pairs, without_cjk
from qmd_daemon.ingest.identifiers import split_identifier
from qmd_daemon.search.query import ParsedQuery
from qmd_daemon.store.connection import OperationalError
from qmd_daemon.store.index_store import IndexStore

# bm25 column weights: path, symbols (defined names), body.
DEFAULT_WEIGHTS = (2.0, 4.0, 1.0)


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def phrase_expression(text: str) -> str:
    """TEXT as an FTS5 phrase. CJK inside it is matched by its character pairs, which the index
    holds in order (ingest/cjk.py), so each run becomes a phrase of its pairs, with the other words."""
    pairs = run_pairs(text)
    if not pairs:
        return _quote(text)
    groups = [_quote(" ".join(run)) for run in pairs] + [_quote(w) for w in without_cjk(text)]
    return groups[0] if len(groups) == 1 else "(" + " AND ".join(groups) + ")"


def term_group(term: str) -> str:
    """A term, or for a compound identifier: the whole token or all of its parts."""
    parts = split_identifier(term)
    whole = _quote(term.lower())
    if not parts:
        return whole
    return f"({whole} OR ({' AND '.join(_quote(p) for p in parts)}))"


def _exclusion(parsed: ParsedQuery) -> str:
    if not parsed.excludes:
        return ""
    return " NOT (" + " OR ".join(phrase_expression(e) for e in parsed.excludes) + ")"


def match_expressions(parsed: ParsedQuery) -> list[str]:
    """FTS5 MATCH strings, strictest first: phrases and all terms, then any term."""
    groups = [term_group(t) for t in parsed.terms]
    phrases = [phrase_expression(p) for p in parsed.phrases]
    if not groups and not phrases:
        return []
    tail = _exclusion(parsed)
    strict = " AND ".join(phrases + groups) + tail
    expressions = [strict]
    if len(groups) > 1 or (groups and phrases):
        loose = " OR ".join(groups)
        expressions.append((f"({loose})" if phrases or tail else loose) + tail)
    return expressions


@dataclass
class LexicalHit:
    chunk_id: int
    score: float  # bm25, larger is better
    strict: bool  # matched every term


def lexical_search(
    store: IndexStore,
    parsed: ParsedQuery,
    collection_ids: list[int],
    limit: int = 200,
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
) -> list[LexicalHit]:
    hits: dict[int, LexicalHit] = {}
    for index, expression in enumerate(match_expressions(parsed)):
        try:
            rows = store.fts_search(expression, collection_ids, limit, weights)
        except OperationalError:
            continue  # an expression FTS5 rejects (e.g. only NOT terms) contributes nothing
        for chunk_id, score in rows:
            if chunk_id not in hits:
                hits[chunk_id] = LexicalHit(chunk_id, score, strict=index == 0)
        if len(hits) >= limit:
            break
    return sorted(hits.values(), key=lambda h: (not h.strict, -h.score))



DF_CACHE_TERMS = 50_000  # document frequencies kept per index state before starting over


def _document_frequencies(store: IndexStore, terms: list[str], collection_ids: list[int]) -> dict[str, int]:
    """Chunks of the collections holding each term. Kept until the data changes: an agent asks
    many questions of one repository, and a long one counts up to 40 terms (~30 ms in django)."""
    state = store.data_state()
    kept = store.derived.get("term_df")
    if kept is None or kept[0] != state or sum(len(d) for d in kept[1].values()) > DF_CACHE_TERMS:
        kept = (state, {})
        store.derived["term_df"] = kept
    known: dict[str, int] = kept[1].setdefault(tuple(sorted(collection_ids)), {})
    for term in terms:
        if term not in known:
            try:
                known[term] = store.fts_count(term_group(term), collection_ids)
            except OperationalError:  # a term FTS5 rejects counts as absent
                known[term] = 0
    return {term: known[term] for term in terms}


def term_idfs(store: IndexStore, parsed: ParsedQuery, collection_ids: list[int]) -> dict[str, float]:
    """Each distinct (lowercased) term of the question -> FTS5's own idf of it over the searched
    collections: log((N - df + 0.5) / (df + 0.5)), at least 1e-6."""
    terms = list(dict.fromkeys(t.lower() for t in parsed.terms))
    if not terms or not collection_ids:
        return {}
    total = sum(store.chunk_count(i) for i in collection_ids)
    frequencies = _document_frequencies(store, terms, collection_ids)
    return {term: max(math.log((total - df + 0.5) / (df + 0.5)), 1e-6) for term, df in frequencies.items()}


def question_idf(store: IndexStore, parsed: ParsedQuery, collection_ids: list[int]) -> float:
    """The BM25 a chunk would earn from matching every term of the question once. A hit's
    BM25 over this says how much of the question it answers in absolute terms: words the
    collections never say (another codebase's names, nonsense) weigh most and match nothing."""
    return sum(term_idfs(store, parsed, collection_ids).values())
