"""Reranking the chunks that matched (not a re-chunk of their files), blended with their position.

Qwen's own figures show its 0.6B reranker lowering code retrieval (MTEB-Code 75.41 -> 73.42), so
the blend keeps most of the fused order at the top: w = 0.75 for ranks 1-3, 0.60 for 4-10, 0.40
beyond (QMD's weights), and bench/retrieval.py measures whether it helps at all.
"""

from __future__ import annotations

from qmd_daemon.ingest.chunk_model import embedding_text
from qmd_daemon.models.reranker import Reranker
from qmd_daemon.search.candidates import Candidate

RERANK_DOC_CHARS = 1600


def position_weight(rank: int) -> float:
    if rank <= 3:
        return 0.75
    if rank <= 10:
        return 0.60
    return 0.40


def rerank(reranker: Reranker, query: str, ranked: list[Candidate], count: int) -> list[Candidate]:
    """Rescore the first `count` candidates; the rest keep their order below them."""
    head = ranked[:count]
    if not head:
        return ranked
    top = max(c.score for c in head) or 1.0
    docs = [
        embedding_text(c.chunk.path, c.chunk.heading, c.chunk.signature, c.chunk.text)[:RERANK_DOC_CHARS]
        for c in head
    ]
    scores = reranker.score(query, docs)
    for rank, (cand, p_yes) in enumerate(zip(head, scores, strict=True), start=1):
        w = position_weight(rank)
        cand.ranks["rerank_input"] = rank
        cand.boosts["rerank_p_yes"] = round(p_yes, 4)
        cand.score = w * (cand.score / top) + (1 - w) * p_yes
    floor = min(c.score for c in head)
    tail = ranked[count:]
    tail_top = max((c.score for c in tail), default=0.0) or 1.0
    for cand in tail:  # keep them below every reranked chunk, in their order
        cand.score = floor * 0.99 * (cand.score / tail_top)
    return sorted(head, key=lambda c: -c.score) + tail
