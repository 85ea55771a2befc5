"""The search pipeline, one step a module: parse, retrieve, score, shape."""

from __future__ import annotations

from dataclasses import dataclass, field

from qmd_daemon.search.candidates import Candidate
from qmd_daemon.search.hit import Hit
from qmd_daemon.search.lexical import DEFAULT_WEIGHTS, lexical_search
from qmd_daemon.search.query import ParsedQuery, content_words, parse_query
from qmd_daemon.search.results import shape_hits
from qmd_daemon.search.scoring import (
    ScoringWeights,
    coherence_boost,
    definition_boost,
    path_penalties,
    path_word_boost,
    saturate,
)
from qmd_daemon.store.index_store import IndexStore

LEXICAL_CANDIDATES = 200


@dataclass
class SearchOptions:
    limit: int = 10
    per_file: int = 2
    max_tokens: int | None = 8000
    min_score: float = 0.0
    explain: bool = False
    boosts: bool = True
    bm25_weights: tuple[float, float, float] = DEFAULT_WEIGHTS
    weights: ScoringWeights = field(default_factory=ScoringWeights)


def _lexical_candidates(
    store: IndexStore, parsed: ParsedQuery, collection_ids: list[int], options: SearchOptions
) -> dict[int, Candidate]:
    lexical = lexical_search(store, parsed, collection_ids, LEXICAL_CANDIDATES, options.bm25_weights)
    if not lexical:
        return {}
    rows = store.chunks_by_ids([h.chunk_id for h in lexical])
    top = max(h.score for h in lexical) or 1.0
    out: dict[int, Candidate] = {}
    for rank, hit in enumerate(lexical, start=1):
        row = rows.get(hit.chunk_id)
        if row is not None:
            out[hit.chunk_id] = Candidate(row, score=hit.score / top, ranks={"bm25": rank})
    return out


def _symbol_candidates(
    store: IndexStore, parsed: ParsedQuery, collection_ids: list[int], cands: dict[int, Candidate]
) -> dict[int, set[str]]:
    """Chunks that define a queried symbol join the candidates even when BM25 missed them."""
    names = list(dict.fromkeys(s.split(".")[-1].split("::")[-1] for s in parsed.symbols))
    defined: dict[int, set[str]] = {}
    for chunk_id, name, _kind in store.chunks_defining(names, collection_ids):
        defined.setdefault(int(chunk_id), set()).add(name.lower())
    stems = [n.lower() for n in names] if parsed.is_symbol_query else []
    extra = [c for c in {*defined, *store.chunks_of_files_named(stems, collection_ids)} if c not in cands]
    for chunk_id, row in store.chunks_by_ids(extra).items():
        cands[chunk_id] = Candidate(row, score=0.0, ranks={"symbol": 1})
    return defined


def run_search(store: IndexStore, query: str, collection_ids: list[int], options: SearchOptions) -> list[Hit]:
    parsed = parse_query(query)
    if not collection_ids:
        return []
    cands = _lexical_candidates(store, parsed, collection_ids, options)
    if options.boosts:
        defined = _symbol_candidates(store, parsed, collection_ids, cands)
        pool = list(cands.values())
        top = 1.0
        definition_boost(pool, parsed, top, options.weights, defined)
        path_word_boost(pool, parsed, top, options.weights)
        path_penalties(pool, parsed, options.weights)
        coherence_boost(pool, top, options.weights)
    ranked = sorted(cands.values(), key=lambda c: -c.score)
    if options.boosts:
        ranked = saturate(ranked, options.weights)
    related = store.related_paths(list({c.chunk.file_id for c in ranked[: options.limit * 3]}))
    return shape_hits(
        ranked,
        content_words(parsed),
        limit=options.limit,
        per_file=options.per_file,
        max_tokens=options.max_tokens,
        min_score=options.min_score,
        related=related,
        explain=options.explain,
    )
