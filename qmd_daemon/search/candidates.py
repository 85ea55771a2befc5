"""A chunk on its way through the pipeline, with the trail of how it got its score."""

from __future__ import annotations

from dataclasses import dataclass, field

from qmd_daemon.store.protocols import ChunkRow


@dataclass
class Candidate:
    chunk: ChunkRow
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)  # list name -> 1-based rank there
    boosts: dict[str, float] = field(default_factory=dict)  # rule -> effect, for --explain
    similarity: float | None = None  # cosine to the question, when vectors ran
    bm25: float | None = None  # raw BM25 of the original question, when the lexical list has it

    def add(self, rule: str, amount: float) -> None:
        if amount:
            self.score += amount
            self.boosts[rule] = round(self.boosts.get(rule, 0.0) + amount, 4)

    def scale(self, rule: str, factor: float) -> None:
        if factor != 1.0:
            self.score *= factor
            self.boosts[rule] = factor
