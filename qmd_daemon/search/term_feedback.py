"""Pseudo-relevance feedback (RM3, Lavrenko & Croft 2001; Lv & Zhai 2009): the first lexical hits
are taken as relevant, the words they share that the question does not say become a second
query, and its list is fused beside BM25 at a small weight. A question says "retry failed
requests"; the code that does it says `backoff`, `max_retries`, `attempt`."""

from __future__ import annotations

import math
import re
from collections import Counter

from qmd_daemon.errors import QueryRejected
from qmd_daemon.search.lexical import LexicalHit, chunks_in_scope, document_frequencies, term_counts
from qmd_daemon.search.query import CODE_NOISE, STOPWORDS, ParsedQuery, content_words
from qmd_daemon.store.lexical_query import AnyOf
from qmd_daemon.store.protocols import ChunkStore
from qmd_daemon.text.identifiers import split_identifier

_IDENTIFIER = re.compile(r"[^\W\d]\w*")
MIN_TERM_CHARS = 3  # `i`, `x`, `ok`: names of anything
MIN_QUESTION_TERMS = 2
MAX_QUESTION_TERMS = 10  # past it a bug report (every report of the sets has 12+): feedback lost them
SHORTLIST_FACTOR = 3  # terms whose collection df is read: this many times those kept


def is_feedback_question(parsed: ParsedQuery) -> bool:
    """Feedback is for a question of two to ten distinct terms: a symbol query, or one word
    ("mutate"), names what it wants, and the first hits' words only pull in their neighbours
    (dplyr's `colwise-mutate.R` over `mutate.R`); a short bug report (under the 600 characters
    of `is_long`) lost its answer from the top 5 (docs/ranking.md)."""
    distinct = len({t.lower() for t in parsed.terms})
    return not parsed.is_symbol_query and MIN_QUESTION_TERMS <= distinct <= MAX_QUESTION_TERMS


def _chunk_words(text: str) -> Counter[str]:
    """Each identifier of a chunk, lowercased, whole and as its parts (as the index holds them)."""
    words: Counter[str] = Counter()
    for match in _IDENTIFIER.finditer(text):
        word = match.group(0)
        words[word.lower()] += 1
        for part in split_identifier(word):
            words[part] += 1
    return words


def feedback_terms(
    store: ChunkStore, parsed: ParsedQuery, hits: list[LexicalHit], collection_ids: list[int],
    chunks: int, terms: int,
) -> list[str]:
    """The `terms` words of the first `chunks` hits with the highest relevance-model weight (RM1:
    the sum over the chunks of tf / length x the chunk's BM25 over the first's) x their idf over
    the collections; not the question's own words, stopwords or words shorter than MIN_TERM_CHARS.
    Only the SHORTLIST_FACTOR x `terms` best by weight alone have their document frequency read
    (one count each, kept per data state)."""
    feedback = hits[:chunks]
    rows = store.chunks_by_ids([h.chunk_id for h in feedback])
    best = max((h.score for h in feedback), default=0.0) or 1.0
    said = set(content_words(parsed))
    weight: dict[str, float] = {}
    for hit in feedback:
        if hit.chunk_id not in rows:
            continue
        words = _chunk_words(rows[hit.chunk_id].text)
        share = hit.score / best / (sum(words.values()) or 1)
        for word, count in words.items():
            if len(word) >= MIN_TERM_CHARS and word not in said and word not in STOPWORDS | CODE_NOISE:
                weight[word] = weight.get(word, 0.0) + count * share
    shortlist = sorted(weight, key=lambda w: -weight[w])[: SHORTLIST_FACTOR * terms]
    if not shortlist:
        return []
    total = chunks_in_scope(store, collection_ids)
    frequencies = document_frequencies(store, shortlist, collection_ids)
    scored = {w: weight[w] * math.log((total - df + 0.5) / (df + 0.5)) for w, df in frequencies.items() if df}
    return sorted((w for w in scored if scored[w] > 0), key=lambda w: -scored[w])[:terms]


def feedback_search(
    store: ChunkStore, words: list[str], collection_ids: list[int], limit: int,
    weights: tuple[float, float, float], file_ids: frozenset[int] | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, BM25) of the chunks holding any of the feedback words (each as the any-term pass
    ORs it, its count already kept): one FTS query, within `file_ids` when a --path filter gives them."""
    if not words:
        return []
    counts = term_counts(store, words, collection_ids)
    try:
        return store.fts_search(AnyOf(tuple(counts[w].query for w in words)), collection_ids, limit, weights,
                                file_ids)
    except QueryRejected:
        return []
