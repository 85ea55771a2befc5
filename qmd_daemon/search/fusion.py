"""Weighted reciprocal-rank fusion over chunk lists (QMD's constants, tuned on the dev eval)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RankedList:
    name: str  # e.g. "bm25", "vec", "bm25:lex1", "vec:hyde"
    chunk_ids: list[int]
    weight: float = 1.0


@dataclass(frozen=True)
class FusionParams:
    k: int = 60
    first_bonus: float = 0.05
    podium_bonus: float = 0.02  # ranks 2 and 3


def fuse(
    lists: list[RankedList], params: FusionParams = FusionParams()
) -> dict[int, tuple[float, dict[str, int]]]:
    """chunk id -> (fused score, {list name: rank}). Bonuses go to a chunk's best rank anywhere."""
    scores: dict[int, float] = {}
    ranks: dict[int, dict[str, int]] = {}
    for ranked in lists:
        for rank, chunk_id in enumerate(ranked.chunk_ids, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + ranked.weight / (params.k + rank)
            ranks.setdefault(chunk_id, {})[ranked.name] = rank
    for chunk_id, where in ranks.items():
        best = min(where.values())
        if best == 1:
            scores[chunk_id] += params.first_bonus
        elif best <= 3:
            scores[chunk_id] += params.podium_bonus
    return {chunk_id: (scores[chunk_id], ranks[chunk_id]) for chunk_id in scores}
