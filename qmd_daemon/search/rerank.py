"""Reranking the chunks that matched (not a re-chunk of their files), blended with their position.

Qwen's own figures show its 0.6B reranker lowering code retrieval (MTEB-Code 75.41 -> 73.42), so
the blend keeps most of the fused order at the top: w = 0.75 for ranks 1-3, 0.60 for 4-10, 0.40
beyond (QMD's weights), and bench/retrieval.py measures whether it helps at all.
"""

from __future__ import annotations

import time

from qmd_daemon.models.reranker import Reranker
from qmd_daemon.search.candidates import Candidate
from qmd_daemon.text.chunk_model import embedding_text

RERANK_DOC_CHARS = 1600
RERANK_BATCH = 4  # pairs scored between deadline checks


def position_weight(rank: int) -> float:
    if rank <= 3:
        return 0.75
    if rank <= 10:
        return 0.60
    return 0.40


def rerank(reranker: Reranker, query: str, ranked: list[Candidate], count: int,
           deadline: float | None = None) -> tuple[list[Candidate], int]:
    """Rescore up to the first `count` candidates, best fused first, in batches; with a
    `deadline` (a `time.perf_counter()` value) each batch is cut to what fits before it at the
    reranker's measured pace, and none starts after it. The unscored keep their order below
    every rescored one. Returns the new order and how many were rescored."""
    head = ranked[:count]
    if not head:
        return ranked, 0
    top = max(c.score for c in head) or 1.0
    scores: list[float] = []
    while len(scores) < len(head):
        size = RERANK_BATCH
        if deadline is not None:
            room, pace = deadline - time.perf_counter(), reranker.pair_seconds
            # pace unknown (a fresh reranker): one pair measures it; then what fits in the room
            size = 0 if room <= 0 else 1 if pace is None else min(size, int(room / pace))
            if size < 1:
                if not scores and room > 0:
                    reranker.no_room()  # so a pace measured under a load spike is measured again
                break
        batch = head[len(scores): len(scores) + size]
        docs = [
            embedding_text(c.chunk.path, c.chunk.heading, c.chunk.signature, c.chunk.text)[:RERANK_DOC_CHARS]
            for c in batch
        ]
        scores.extend(reranker.score(query, docs))
    head, rest = head[: len(scores)], ranked[len(scores):]
    if not head:
        return ranked, 0
    for rank, (cand, p_yes) in enumerate(zip(head, scores, strict=True), start=1):
        w = position_weight(rank)
        cand.ranks["rerank_input"] = rank
        cand.boosts["rerank_p_yes"] = round(p_yes, 4)
        cand.score = w * (cand.score / top) + (1 - w) * p_yes
    floor = min(c.score for c in head)
    tail_top = max((c.score for c in rest), default=0.0) or 1.0
    for cand in rest:  # keep them below every reranked chunk, in their order
        cand.score = floor * 0.99 * (cand.score / tail_top)
    return sorted(head, key=lambda c: -c.score) + rest, len(head)
