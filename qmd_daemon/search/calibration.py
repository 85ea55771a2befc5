"""Scores in [0, 1] that mean the same across queries: an estimate of P(this hit is relevant).

The pipeline's own score is relative (the best candidate of every query is 1), so it says nothing
about whether the best is any good. The calibrated score adds absolute evidence: how many of the
question's words the chunk holds, and its cosine to the question when vectors ran. The weights
are a logistic fit on the dev eval (`python bench/calibrate.py` prints them and the reliability
table); one threshold (e.g. 0.5) then keeps roughly the hits that are more likely right than not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from qmd_daemon.search.candidates import Candidate


@dataclass(frozen=True)
class Calibration:
    """Fitted by `QMD_MODELS_DIR=... python bench/calibrate.py --profile small` (root scope, 1672
    hits of lexical and hybrid runs): scores of 0.5-0.6 were relevant 69% of the time, under 0.1
    3%. With MiniLM the cosine adds little beyond the fused position; refit for other models."""

    relative: float = 4.49
    coverage: float = 0.34
    similarity: float = 0.12
    no_vectors: float = -0.46  # added when the hit has no cosine (lexical-only or not a vector hit)
    bias: float = -4.50


CALIBRATION = Calibration()


def coverage(cand: Candidate, words: list[str]) -> float:
    """Fraction of the question's content words found in the chunk or its path."""
    if not words:
        return 0.0
    haystack = (cand.chunk.path + "\n" + cand.chunk.text).lower()
    return sum(1 for w in words if w in haystack) / len(words)


def features(cand: Candidate, top: float, words: list[str]) -> dict[str, float]:
    return {
        "relative": max(cand.score, 0.0) / top if top > 0 else 0.0,
        "coverage": coverage(cand, words),
        "similarity": cand.similarity if cand.similarity is not None else 0.0,
        "no_vectors": 1.0 if cand.similarity is None else 0.0,
    }


def probability(values: dict[str, float], cal: Calibration = CALIBRATION) -> float:
    z = (
        cal.relative * values["relative"]
        + cal.coverage * values["coverage"]
        + cal.similarity * values["similarity"]
        + cal.no_vectors * values["no_vectors"]
        + cal.bias
    )
    return 1.0 / (1.0 + math.exp(-z))
