"""Signals that could say WHEN the vector list should move first place (issue 11), each measured
as a hybrid variant beside lexical and hybrid in one bench/retrieval.py run.

    [FUSION_SIGNALS_LOG=signals.jsonl] python bench/fusion_signals.py [bench/retrieval.py arguments] \
        --methods lexical,hybrid,signals,agree5-low,...

Why a driver and not SearchOptions: each signal is a candidate rule (all of them dropped so far,
docs/ranking.md, "When the vector list should move first place: signals tried"); the driver
changes only the vector lists' weight of one search, from the two lists as retrieval returned
them, so a rule costs no product code until it is kept. Every signal is read at file level (a
file's best chunk in each list), as the eval scores files:
- agreement: how many of the vector list's leading files lexical's leading files hold;
- lexical margin: BM25's first file over its second (a clear lexical winner);
- support: BM25 of the vector list's first file (does it say the question's words at all);
- span: the vector list's best cosine over its mean (flat or peaked).
The method `signals` is hybrid itself, logging each search's signals for reading offline.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import fmean
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import retrieval  # noqa: E402
from qmd_daemon.search import pipeline  # noqa: E402
from qmd_daemon.search.fusion import RankedList, normalised  # noqa: E402

ORIGINAL_CANDIDATES = pipeline._candidates
FIRED: dict[str, list[float]] = {}  # rule name -> the factor of each search (logged at the end)
SIGNALS_LOG = os.environ.get("FUSION_SIGNALS_LOG")  # jsonl: each search's signals, for reading offline


@dataclass(frozen=True)
class Signals:
    """One search's two lists at file level, best first: file ids and their best chunk's score
    (BM25; cosine), and the vector list's mean cosine (fusion's floor for it)."""

    lexical: list[int]
    lexical_scores: list[float]
    vector: list[int]
    vector_scores: list[float]
    vector_mean: float

    def agreement(self, k: int, lexical_k: int) -> float:
        """Share of the vector list's first k files that are among lexical's first lexical_k."""
        if not self.vector:
            return 1.0
        return len(set(self.vector[:k]) & set(self.lexical[:lexical_k])) / min(k, len(self.vector))

    def margin(self) -> float:
        """BM25's first file over its second: 0 a tie, 1 a lone match."""
        s = self.lexical_scores
        if not s or s[0] <= 0:
            return 0.0
        return 1.0 - (s[1] / s[0] if len(s) > 1 else 0.0)

    def vector_first_support(self) -> float:
        """BM25 of the vector list's first file over BM25's first file's (0: says no question word)."""
        if not self.vector or not self.lexical_scores or self.lexical_scores[0] <= 0:
            return 1.0
        scores = dict(zip(self.lexical, self.lexical_scores, strict=True))
        return scores.get(self.vector[0], 0.0) / self.lexical_scores[0]

    def vector_span(self) -> float:
        """The vector list's best cosine above its mean (fusion divides by it: a flat list's best
        counts as much as a peaked one's)."""
        return (self.vector_scores[0] - self.vector_mean) if self.vector_scores else 0.0

    def as_dict(self) -> dict[str, float]:
        return {"agree3in3": self.agreement(3, 3), "agree5in10": self.agreement(5, 10),
                "margin": self.margin(), "support": self.vector_first_support(),
                "span": self.vector_span(), "same_first": float(self.vector[:1] == self.lexical[:1])}


Rule = Callable[[Signals], float]  # the vector lists' weight factor of one search
Shape = Callable[[float], float]  # a chunk's normalised vector score -> the score fusion sums


def ranked_files(ranked: RankedList, file_of: dict[int, int]) -> tuple[list[int], list[float]]:
    """The list's files best first, each with its best chunk's score."""
    best: dict[int, float] = {}
    for cid, score in sorted(zip(ranked.chunk_ids, ranked.scores, strict=True), key=lambda p: -p[1]):
        if cid in file_of:
            best.setdefault(file_of[cid], score)
    return list(best), list(best.values())


def low_agreement(k: int, lexical_k: int, below: float, factor: float) -> Rule:
    """Few of the vector list's leading files among lexical's leading ones: x`factor`. Under 1, the
    brief's reading (the vector list is off-topic); over 1, the reverse (it brings files lexical
    missed, which have only their vector share to reach first place)."""
    return lambda s: factor if s.agreement(k, lexical_k) < below else 1.0


def graded_agreement(k: int, lexical_k: int, floor: float) -> Rule:
    return lambda s: floor + (1.0 - floor) * s.agreement(k, lexical_k)


def two_way_agreement(k: int, lexical_k: int) -> Rule:
    """x0.5 with no agreement up to x1.5 with full agreement: trust follows agreement both ways."""
    return lambda s: 0.5 + s.agreement(k, lexical_k)


def clear_lexical(at_least: float, factor: float, corroborated: int) -> Rule:
    """A clear lexical winner: vectors weigh `factor` unless their first file is among lexical's
    first `corroborated` (the vector list agreeing on another file lexical also ranks high)."""
    def rule(s: Signals) -> float:
        if s.margin() < at_least or (s.vector and s.vector[0] in s.lexical[:corroborated]):
            return 1.0
        return factor
    return rule


def unsure_lexical(below: float, factor: float) -> Rule:
    """BM25's first two files near a tie: its order says little, so the vectors weigh `factor`."""
    return lambda s: factor if s.margin() < below else 1.0


def weak_support(below: float, factor: float) -> Rule:
    """The vector list's first file says few of the question's words (its BM25 under `below` of
    lexical's first) and is not lexical's first."""
    return lambda s: factor if s.vector_first_support() < below else 1.0


def flat_vectors(typical: float, low: float, high: float) -> Rule:
    """The vector list weighs its span over a typical span: a flat list (its best hardly closer
    than its mean) less, a peaked one more."""
    return lambda s: min(high, max(low, s.vector_span() / typical))


def uniform(factor: float) -> Rule:
    """The control: every search's vector weight times `factor` (what a signal must beat)."""
    return lambda _s: factor


RULES: dict[str, Rule] = {
    "signals": uniform(1.0),  # hybrid itself, its signals logged (FUSION_SIGNALS_LOG)
    "weight-x0.8": uniform(0.8),
    "weight-x1.2": uniform(1.2),
    "agree5-low": low_agreement(5, 10, 0.4, 0.5),
    "agree3in3-low": low_agreement(3, 3, 0.34, 0.5),
    "agree3in3-graded": graded_agreement(3, 3, 0.5),
    "agree5in5-graded": graded_agreement(5, 5, 0.5),
    "agree3in3-both": two_way_agreement(3, 3),
    "margin0.1": clear_lexical(0.1, 0.5, 3),
    "margin0.2": clear_lexical(0.2, 0.5, 3),
    "margin0.3": clear_lexical(0.3, 0.5, 3),
    "margin0.2-first": clear_lexical(0.2, 0.5, 1),
    "unsupported": weak_support(1e-9, 0.5),
    "support0.3": weak_support(0.3, 0.5),
    "unsure0.1-up": unsure_lexical(0.1, 1.4),
    "unsure0.2-up": unsure_lexical(0.2, 1.3),
    "unsure0.05-up": unsure_lexical(0.05, 1.5),
    "span-graded": flat_vectors(0.23, 0.5, 1.5),
    "disagree5-up": low_agreement(5, 10, 0.5, 1.5),
    "disagree5-up0.7": low_agreement(5, 10, 0.7, 1.3),
    "disagree3in3-up": low_agreement(3, 3, 0.6, 1.3),
}


def with_rule(name: str, rule: Rule, query: str) -> Callable[[Any, list[RankedList]], Any]:
    """pipeline._candidates with the vector lists' weight scaled by the rule's factor."""
    def candidates(store: Any, lists: list[RankedList]) -> Any:
        rows = store.chunks_by_ids(list({cid for r in lists for cid in r.chunk_ids}))
        file_of = {cid: row.file_id for cid, row in rows.items()}
        lexical = next((r for r in lists if r.name == "bm25"), None)
        vector = next((r for r in lists if r.name == "vec"), None)
        if lexical is None or vector is None:
            return ORIGINAL_CANDIDATES(store, lists)
        signals = Signals(*ranked_files(lexical, file_of), *ranked_files(vector, file_of),
                          fmean(vector.scores))
        factor = rule(signals)
        FIRED.setdefault(name, []).append(factor)
        if SIGNALS_LOG and name == "signals":
            with open(SIGNALS_LOG, "a", encoding="utf-8") as log:
                log.write(json.dumps({"query": query, **signals.as_dict()}) + "\n")
        scaled = [replace(r, weight=r.weight * factor) if r.name.split(":")[0] == "vec" else r for r in lists]
        return ORIGINAL_CANDIDATES(store, scaled)
    return candidates


# A per-file reading instead of a per-search one: each chunk's normalised vector score reshaped, so
# that the vector list moves only the files it is clearly near (the losses are 0.01-0.10 gaps).
SHAPES: dict[str, Shape] = {
    "floor0.25": lambda v: max(0.0, (v - 0.25) / 0.75),
    "floor0.5": lambda v: max(0.0, (v - 0.5) / 0.5),
    "squared": lambda v: v * v,
}


def with_shape(shape: Shape) -> Callable[[Any, list[RankedList]], Any]:
    """pipeline._candidates with each vector list's normalised scores reshaped (as a list already
    in [0, 1], its best 1: BM25's scale over its best leaves it as it is)."""
    def candidates(store: Any, lists: list[RankedList]) -> Any:
        shaped = []
        for r in lists:
            if r.name.split(":")[0] == "vec":
                values = normalised(r)
                r = RankedList(r.name, r.chunk_ids, [shape(values[c]) for c in r.chunk_ids], "bm25", r.weight)
            shaped.append(r)
        return ORIGINAL_CANDIDATES(store, shaped)
    return candidates


def rule_method(name: str, rule: Rule | None = None,
                shape: Shape | None = None) -> Callable[[retrieval.Context], retrieval.MethodFn]:
    """bench/retrieval.py's hybrid method, its searches fused under the rule (or the shape)."""
    hybrid = retrieval.engine_method(**retrieval.ENGINE_VARIANTS["hybrid"])

    def factory(ctx: retrieval.Context) -> retrieval.MethodFn:
        search = hybrid(ctx)

        def run(query: str, collection: str) -> list[str]:
            variant = with_shape(shape) if shape is not None else with_rule(name, rule or uniform(1.0), query)
            pipeline._candidates = variant  # type: ignore[assignment]
            try:
                return search(query, collection)
            finally:
                pipeline._candidates = ORIGINAL_CANDIDATES  # type: ignore[assignment]
        return run
    return factory


def main(argv: list[str] | None = None) -> int:
    retrieval.METHODS.update({name: rule_method(name, rule) for name, rule in RULES.items()})
    retrieval.METHODS.update({name: rule_method(name, shape=shape) for name, shape in SHAPES.items()})
    code = retrieval.main(argv)
    for name, factors in FIRED.items():
        changed = sum(1 for f in factors if f != 1.0)
        retrieval.log(f"[{name}] vector weight changed in {changed} of {len(factors)} searches, "
                      f"mean factor {sum(factors) / len(factors):.3f}")
    return code


if __name__ == "__main__":
    sys.exit(main())
