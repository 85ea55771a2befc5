"""BM25 over chunks: all terms first, then any term, so a query never comes back empty
just because one word is missing."""

from __future__ import annotations

import math
from dataclasses import dataclass

from qmd_daemon.errors import QueryRejected
from qmd_daemon.search.query import ParsedQuery
from qmd_daemon.store.lexical_query import AllOf, AnyOf, LexicalQuery, Phrase, Without, Word
from qmd_daemon.store.protocols import ChunkStore
from qmd_daemon.text.identifiers import split_identifier

# bm25 column weights: path, symbols (defined names), body.
DEFAULT_WEIGHTS = (2.0, 4.0, 1.0)


def term_query(term: str) -> LexicalQuery:
    """A term, or for a compound identifier: the whole token or all of its parts."""
    parts = split_identifier(term)
    whole = Word(term.lower())
    if not parts:
        return whole
    return AnyOf((whole, AllOf(tuple(Word(p) for p in parts))))


def lexical_queries(parsed: ParsedQuery) -> list[LexicalQuery]:
    """The queries to run, strictest first: phrases and all terms, then any term."""
    groups = [term_query(t) for t in parsed.terms]
    phrases: list[LexicalQuery] = [Phrase(p) for p in parsed.phrases]
    if not groups and not phrases:
        return []
    drop = AnyOf(tuple(Phrase(e) for e in parsed.excludes)) if parsed.excludes else None

    def excluding(keep: LexicalQuery) -> LexicalQuery:
        return keep if drop is None else Without(keep, drop)

    queries = [excluding(AllOf(tuple(phrases + groups)))]
    if len(groups) > 1 or (groups and phrases):
        queries.append(excluding(AnyOf(tuple(groups))))
    return queries


@dataclass
class LexicalHit:
    chunk_id: int
    score: float  # bm25, larger is better
    strict: bool  # matched every term


def lexical_search(
    store: ChunkStore,
    parsed: ParsedQuery,
    collection_ids: list[int],
    limit: int = 200,
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
) -> list[LexicalHit]:
    hits: dict[int, LexicalHit] = {}
    for index, query in enumerate(lexical_queries(parsed)):
        try:
            rows = store.fts_search(query, collection_ids, limit, weights)
        except QueryRejected:
            continue  # a query the backend cannot run contributes nothing
        for chunk_id, score in rows:
            if chunk_id not in hits:
                hits[chunk_id] = LexicalHit(chunk_id, score, strict=index == 0)
        if len(hits) >= limit:
            break
    return sorted(hits.values(), key=lambda h: (not h.strict, -h.score))



DF_CACHE_TERMS = 50_000  # document frequencies kept per index state before starting over


def _document_frequencies(store: ChunkStore, terms: list[str], collection_ids: list[int]) -> dict[str, int]:
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
                known[term] = store.fts_count(term_query(term), collection_ids)
            except QueryRejected:  # a term the backend cannot match counts as absent
                known[term] = 0
    return {term: known[term] for term in terms}


def question_idf(store: ChunkStore, parsed: ParsedQuery, collection_ids: list[int]) -> float:
    """The BM25 a chunk would earn from matching every term of the question once, by FTS5's own
    idf (log((N - df + 0.5) / (df + 0.5)), at least 1e-6) over the searched collections. A hit's
    BM25 over this says how much of the question it answers in absolute terms: words the
    collections never say (another codebase's names, nonsense) weigh most and match nothing."""
    terms = list(dict.fromkeys(t.lower() for t in parsed.terms))
    if not terms or not collection_ids:
        return 0.0
    total = sum(store.chunk_count(i) for i in collection_ids)
    frequencies = _document_frequencies(store, terms, collection_ids)
    return sum(max(math.log((total - df + 0.5) / (df + 0.5)), 1e-6) for df in frequencies.values())
