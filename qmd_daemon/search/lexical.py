"""BM25 over chunks: all terms first, then any term, so a query never comes back empty
just because one word is missing."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from qmd_daemon.errors import QueryRejected
from qmd_daemon.search.query import MAX_QUESTION_TERMS, ParsedQuery
from qmd_daemon.store.file_stems import path_stems
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


def lexical_queries(parsed: ParsedQuery, loose: list[LexicalQuery] | None = None) -> list[LexicalQuery]:
    """The queries to run, strictest first: phrases and all terms, then any of `loose` (default:
    every term's term_query; lexical_search passes the selective terms' loose queries)."""
    groups = [term_query(t) for t in parsed.terms]
    phrases: list[LexicalQuery] = [Phrase(p) for p in parsed.phrases]
    if not groups and not phrases:
        return []
    drop = AnyOf(tuple(Phrase(e) for e in parsed.excludes)) if parsed.excludes else None

    def excluding(keep: LexicalQuery) -> LexicalQuery:
        return keep if drop is None else Without(keep, drop)

    queries = [excluding(AllOf(tuple(phrases + groups)))]
    any_of = groups if loose is None else loose
    if any_of and (len(groups) > 1 or phrases):
        queries.append(excluding(AnyOf(tuple(any_of))))
    return queries


# What the any-term pass ORs. FTS5 reads the whole posting list of every term it ORs and scores
# each row it finds, so a bug report's 40 terms read most of an index of 30 repositories (a
# common word is in 100k of 255k chunks). Past LOOSE_POSTINGS it takes the cheapest terms while
# the postings they read fit, which bounds its cost whatever the index size, and leaves out a
# word in more than MAX_LOOSE_SHARE of the scope's chunks: its BM25 weight is small, and on the
# issue sets ranking without it is as good (bench/retrieval.py, docs/scale.md). A question's
# terms, and most bug reports' in one repository, fit the budget whole.
LOOSE_POSTINGS = 30_000
MAX_LOOSE_SHARE = 0.1


def selective_terms(
    terms: list[str], frequencies: dict[str, int], total: int, postings: dict[str, int] | None = None
) -> list[str]:
    """The terms the any-term pass ORs, in the query's order: those the collections hold (a term
    in no chunk matches nothing); when the postings they read (`postings`, default: their
    frequencies) exceed the budget, those not common, the cheapest first while they fit (the
    cheapest always, so that common words still find chunks)."""
    cost = frequencies if postings is None else postings
    present = sorted((t for t in terms if frequencies[t] > 0), key=lambda t: cost[t])
    if sum(cost[t] for t in present) <= LOOSE_POSTINGS:
        return [t for t in terms if frequencies[t] > 0]
    held = [t for t in present if frequencies[t] <= MAX_LOOSE_SHARE * total] or present[:1]
    kept: set[str] = set()
    read = 0
    for term in held:
        read += cost[term]
        if kept and read > LOOSE_POSTINGS:
            break
        kept.add(term)
    return [t for t in terms if t in kept]


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
    file_ids: frozenset[int] | None = None,
) -> list[LexicalHit]:
    """The best LIMIT chunks of the collections (of the files FILE_IDS only, when given: BM25
    ranks among them, its statistics still the collections')."""
    counts = term_counts(store, parsed.terms, collection_ids)
    frequencies = {term: count.chunks for term, count in counts.items()}
    postings = {term: count.postings for term, count in counts.items()}
    loose_terms = selective_terms(parsed.terms, frequencies, chunks_in_scope(store, collection_ids), postings)
    every_term_held = all(frequencies[t] > 0 for t in parsed.terms)
    hits: dict[int, LexicalHit] = {}
    for index, query in enumerate(lexical_queries(parsed, [counts[t].query for t in loose_terms])):
        if index == 0 and not every_term_held:
            continue  # a term no chunk holds: the all-terms pass cannot match
        try:
            rows = store.fts_search(query, collection_ids, limit, weights, file_ids)
        except QueryRejected:
            continue  # a query the backend cannot run contributes nothing
        for chunk_id, score in rows:
            if chunk_id not in hits:
                hits[chunk_id] = LexicalHit(chunk_id, score, strict=index == 0)
        if len(hits) >= limit:
            break
    return sorted(hits.values(), key=lambda h: (not h.strict, -h.score))


# files a question's word names, searched whatever else the scope holds; a word naming more (`index`
# in a monorepo) names none
MAX_NAMED_FILES = 20
MAX_NAMED_HITS = 50


def file_names_of(word: str) -> set[str]:
    """The file stems a question word names: itself, its singular or plural (`errors` names
    `error.py`, `exception` names `exceptions.hpp`, `matches` names `match.rs`)."""
    if word.endswith("s"):
        names = {word, word[:-1]}
        if word.endswith(("ses", "xes", "ches", "shes", "zes")):
            names.add(word[:-2])
        return names
    return {word, f"{word}es" if word.endswith(("x", "ch", "sh", "z")) else f"{word}s"}


def named_files_search(
    store: ChunkStore,
    parsed: ParsedQuery,
    collection_ids: list[int],
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
    file_ids: frozenset[int] | None = None,
) -> list[LexicalHit]:
    """BM25 hits in the files a question's word names (`exceptions.hpp` for "exception types for
    parse and type errors"), with the statistics of the whole scope. When LIMIT chunks match every
    term (a whole tree's tests say `parse_error` and `type_error` thousands of times) the any-term
    pass never runs, and the file holding the definitions was never a candidate to score."""
    if parsed.is_symbol_query or len({t.lower() for t in parsed.terms}) > MAX_QUESTION_TERMS:
        return []  # a bug report's words ("python", "test") name files in passing
    words = {t.lower() for t in parsed.terms if len(t) >= 4 and t.isalpha()}
    names_of = {word: file_names_of(word) for word in words}
    every_name = set().union(*names_of.values()) if names_of else set()
    if not every_name:
        return []
    rows = store.chunks_by_ids(store.chunks_of_files_named(sorted(every_name), collection_ids)).values()
    files_of: dict[str, set[int]] = {}
    for row in rows:
        if file_ids is None or row.file_id in file_ids:
            for word, names in names_of.items():
                if names & path_stems(row.path):
                    files_of.setdefault(word, set()).add(row.file_id)
    named = set().union(*(files for files in files_of.values() if len(files) <= MAX_NAMED_FILES))
    if not named:
        return []
    return lexical_search(store, parsed, collection_ids, MAX_NAMED_HITS, weights, frozenset(named))


# Inside one_data_state(): the data_state() each store answered first (id(store) -> state).
_search_states: ContextVar[dict[int, Any] | None] = ContextVar("search_data_states", default=None)


@contextmanager
def one_data_state(store: ChunkStore) -> Iterator[None]:
    """Inside (one search), STORE's data_state() is asked once: on PostgreSQL each ask is a round
    trip, and a search asked six times. A write that lands meanwhile is seen by the next search."""
    token = _search_states.set({})
    try:
        yield
    finally:
        _search_states.reset(token)


def _data_state(store: ChunkStore) -> Any:
    states = _search_states.get()
    if states is None:
        return store.data_state()
    if id(store) not in states:
        states[id(store)] = store.data_state()
    return states[id(store)]


def kept_for_this_data(store: ChunkStore, name: str) -> dict[Any, Any]:
    """A dict in `store.derived` that starts over empty whenever the data changes."""
    state = _data_state(store)
    kept = store.derived.get(name)
    if kept is None or kept[0] != state:
        kept = (state, {})
        store.derived[name] = kept
    return kept[1]


def chunks_in_scope(store: ChunkStore, collection_ids: list[int]) -> int:
    """Chunks of the collections, kept until the data changes (a count over the scope's chunks)."""
    totals = kept_for_this_data(store, "chunk_total")
    scope = tuple(sorted(collection_ids))
    if scope not in totals:
        totals[scope] = store.chunks_in(collection_ids)
    return int(totals[scope])


DF_CACHE_TERMS = 50_000  # document frequencies kept per index state before starting over


@dataclass(frozen=True)
class TermCount:
    """A term's loose query (what the any-term pass ORs for it), the chunks it matches, and the
    postings FTS5 reads to find them."""

    query: LexicalQuery
    chunks: int
    postings: int


def _count_term(store: ChunkStore, term: str, collection_ids: list[int], whole_chunks: int) -> TermCount:
    """A compound the collections hold as one token is counted and ORed as that token: its
    term_query would read the postings of every part (`set`: 95k of 497k chunks, `output`: 22k)
    to find the few chunks that spell it another way. Its parts are the fallback for a compound
    no chunk spells as the question does; that reads each part's postings (`py37_0`: `py`, `37`
    and `0`, 325k + 2k + 193k at 497k chunks, for 655 chunks). `whole_chunks`: the chunks
    holding the term lowercased as one word (its count, taken with the other terms' at once)."""
    parts = split_identifier(term)
    if not parts or whole_chunks:  # a term without parts: its term_query is that word
        return TermCount(Word(term.lower()), whole_chunks, whole_chunks)
    query = term_query(term)
    try:
        chunks = store.fts_count(query, collection_ids)
    except QueryRejected:  # a term the backend cannot match counts as absent
        return TermCount(query, 0, 0)
    if not chunks:
        return TermCount(query, 0, 0)
    return TermCount(query, chunks, sum(c.chunks for c in term_counts(store, parts, collection_ids).values()))


def term_counts(store: ChunkStore, terms: list[str], collection_ids: list[int]) -> dict[str, TermCount]:
    """Each term's loose query and its chunks in the collections. Kept until the data changes:
    an agent asks many questions of one repository, a long one counts up to 40 terms (~30 ms in
    django), and one search reads them twice (to pick the terms of its any-term pass, for the
    question's idf)."""
    kept = kept_for_this_data(store, "term_df")
    if sum(len(d) for d in kept.values()) > DF_CACHE_TERMS:
        kept.clear()
    known: dict[str, TermCount] = kept.setdefault(tuple(sorted(collection_ids)), {})
    missing = [term for term in dict.fromkeys(terms) if term not in known]
    if missing:
        wholes = store.word_counts(list(dict.fromkeys(t.lower() for t in missing)), collection_ids)
        for term in missing:
            known[term] = _count_term(store, term, collection_ids, wholes[term.lower()])
    return {term: known[term] for term in terms}


def document_frequencies(store: ChunkStore, terms: list[str], collection_ids: list[int]) -> dict[str, int]:
    """Chunks of the collections holding each term (as its loose query matches it)."""
    return {term: count.chunks for term, count in term_counts(store, terms, collection_ids).items()}


def term_idfs(store: ChunkStore, parsed: ParsedQuery, collection_ids: list[int]) -> dict[str, float]:
    """Each distinct (lowercased) term of the question -> FTS5's own idf of it over the searched
    collections: log((N - df + 0.5) / (df + 0.5)), at least 1e-6."""
    terms = list(dict.fromkeys(t.lower() for t in parsed.terms))
    if not terms or not collection_ids:
        return {}
    total = chunks_in_scope(store, collection_ids)
    frequencies = document_frequencies(store, terms, collection_ids)
    return {term: max(math.log((total - df + 0.5) / (df + 0.5)), 1e-6) for term, df in frequencies.items()}


def question_idf(store: ChunkStore, parsed: ParsedQuery, collection_ids: list[int]) -> float:
    """The BM25 a chunk would earn from matching every term of the question once. A hit's
    BM25 over this says how much of the question it answers in absolute terms: words the
    collections never say (another codebase's names, nonsense) weigh most and match nothing."""
    return sum(term_idfs(store, parsed, collection_ids).values())
