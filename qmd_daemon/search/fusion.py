"""Score fusion over chunk lists: a weighted sum of each list's normalised scores (a convex
combination, Bruch et al. 2023, "An Analysis of Fusion Functions for Hybrid Retrieval").

Why not reciprocal ranks: with one list the pipeline ranks by normalised BM25, and RRF with its
rank bonuses replaced that base as soon as a second list came, whatever the second list's weight;
on code nobody tuned on (the broad set, docs/ranking.md) that cost more than vectors add. Here a
list of weight 0 changes no score, and the lexical list alone gives exactly normalised BM25.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean
from typing import Literal

Scale = Literal["bm25", "cosine"]


@dataclass(frozen=True)
class RankedList:
    """One retriever's hits, best first, with its own score for each (`scores[i]` is
    `chunk_ids[i]`'s). `scale` says how the scores become [0, 1]: BM25 (no match scores 0) over the
    list's best; a cosine over the list's mean, min-max above it (the best 1, a hit no closer to the
    question than the list's average 0)."""

    name: str  # e.g. "bm25", "vec", "bm25:lex1", "vec:hyde"
    chunk_ids: list[int]
    scores: list[float]
    scale: Scale
    weight: float = 1.0


def normalised(ranked: RankedList) -> dict[int, float]:
    """chunk id -> the list's score in [0, 1], its best being 1."""
    if not ranked.scores:
        return {}
    pairs = zip(ranked.chunk_ids, ranked.scores, strict=True)
    if ranked.scale == "bm25":
        top = max(ranked.scores) or 1.0
        return {cid: s / top for cid, s in pairs}
    # Why the mean and not the last hit: MiniLM's 100 nearest chunks of a code question lie within
    # 0.15-0.6 of cosine of each other, so min-max gave the whole tail a share, and summed over a
    # long file's many chunks (coherence_boost) that share put big files over the answer
    # (docs/ranking.md, "the vector list's mean").
    floor = fmean(ranked.scores)
    span = max(ranked.scores) - floor
    return {cid: max(0.0, (s - floor) / span) if span > 0 else 1.0 for cid, s in pairs}


def fuse(lists: list[RankedList], limit: int) -> dict[int, tuple[float, dict[str, int]]]:
    """chunk id -> (sum of weight x normalised score over the lists, {list name: rank by score}),
    at most `limit` chunks, the best kept; chunks in the order the lists first name them."""
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    for ranked in lists:
        for cid, value in normalised(ranked).items():
            scores[cid] = scores.get(cid, 0.0) + ranked.weight * value
        by_score = sorted(zip(ranked.chunk_ids, ranked.scores, strict=True), key=lambda pair: -pair[1])
        for rank, (cid, _) in enumerate(by_score, start=1):
            ranks.setdefault(cid, {})[ranked.name] = rank
    if len(scores) > limit:
        kept = set(sorted(scores, key=lambda c: -scores[c])[:limit])
        scores = {cid: s for cid, s in scores.items() if cid in kept}
    return {cid: (s, ranks[cid]) for cid, s in scores.items()}
