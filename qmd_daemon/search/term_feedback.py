"""Pseudo-relevance feedback (RM3, Lavrenko & Croft 2001; Lv & Zhai 2009): the first lexical hits
are taken as relevant, and the words they share that the question does not say make one more
list, fused beside BM25 at a small weight: lexical's own candidates re-scored by the words they
hold (`feedback_rescore`, the default), or those words as a second FTS query (`feedback_search`,
SearchOptions.prf_rescore False). A question says "retry failed requests"; the code that does it
says `backoff`, `max_retries`, `attempt`."""

from __future__ import annotations

import math
from collections import Counter

from qmd_daemon.errors import QueryRejected
from qmd_daemon.search.lexical import LexicalHit, chunks_in_scope, document_frequencies, term_counts
from qmd_daemon.search.query import CODE_NOISE, MAX_QUESTION_TERMS, STOPWORDS, ParsedQuery, content_words
from qmd_daemon.store.lexical_query import AnyOf
from qmd_daemon.store.protocols import ChunkRow, ChunkStore
from qmd_daemon.text.identifiers import NAME, indexed_parts

MIN_TERM_CHARS = 3  # `i`, `x`, `ok`: names of anything
MIN_QUESTION_TERMS = 2
SHORTLIST_FACTOR = 3  # terms whose collection df is read: this many times those kept
_NOT_FEEDBACK = STOPWORDS | CODE_NOISE


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
    for word, count in Counter(m.group(0) for m in NAME.finditer(text)).items():
        words[word.lower()] += count
        for part in indexed_parts(word):
            words[part] += count
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
            if len(word) >= MIN_TERM_CHARS and word not in said and word not in _NOT_FEEDBACK:
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


def feedback_rescore(
    store: ChunkStore, words: list[str], collection_ids: list[int], candidates: dict[int, ChunkRow],
) -> list[tuple[int, float]]:
    """(chunk id, the summed idf of the feedback words it holds) for those of `candidates` (their
    rows) holding any, best first. Which words a candidate holds is read from its path and text here,
    not asked of the index: a MATCH a word over the candidates' id ranges cost 9-17 ms a question
    at 479k chunks (350 statements), the texts' reading and scanning a few, whatever the index's size."""
    if not words or not candidates:
        return []
    counts = term_counts(store, words, collection_ids)
    total = chunks_in_scope(store, collection_ids)
    idf = {w: math.log((total - counts[w].chunks + 0.5) / (counts[w].chunks + 0.5)) for w in words}
    weighed = [w for w in words if idf[w] > 0]
    scored: list[tuple[int, float]] = []
    for chunk_id, row in candidates.items():
        text = f"{row.path}\n{row.text}"
        lowered = lower_in_place(text)
        score = sum(idf[w] for w in weighed if w in lowered and holds_word(text, lowered, w))
        if score > 0:
            scored.append((chunk_id, score))
    return sorted(scored, key=lambda pair: -pair[1])


def lower_in_place(text: str) -> str:
    """TEXT lowercased character for character, so an index into one is the same place in the
    other: `str.lower` turns `İ` into two characters, which moved every later match off its text."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


def holds_word(text: str, lowered: str, word: str) -> bool:
    """Whether lowercase `word` stands in TEXT (`lowered`: lower_in_place of it) as a word or as a part
    of a compound identifier, as the index splits them (`retries` in `maxRetries` and
    `max_retries`, `server` in `HTTPServer`; not `art` in `start`). Stems are not matched."""
    start = lowered.find(word)
    while start >= 0:
        if _part_starts(text, start) and _part_ends(text, start + len(word)):
            return True
        start = lowered.find(word, start + 1)
    return False


def _part_starts(text: str, i: int) -> bool:
    return i == 0 or not text[i - 1].isalnum() or _parts_meet(text, i)  # `_` and punctuation end a part


def _part_ends(text: str, j: int) -> bool:
    return j == len(text) or not text[j].isalnum() or _parts_meet(text, j)


def _parts_meet(text: str, k: int) -> bool:
    """Whether one identifier part ends before text[k] and the next starts there, as the index
    splits them: at a digit run's edge, `getUser` (lower to upper), `HTTP|Server`."""
    before, here = text[k - 1], text[k]
    if before.isdigit() != here.isdigit() or (before.islower() and here.isupper()):
        return True
    return before.isupper() and here.isupper() and k + 1 < len(text) and text[k + 1].islower()
