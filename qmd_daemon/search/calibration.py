"""Scores in [0, 1] that mean the same across queries and repositories: an estimate of
P(this hit answers the question), so that a low best score says "nothing here".

The pipeline's own score is relative (the best candidate of every query is 1), so it says nothing
about whether the best is any good: a question about another codebase, or nonsense, still has a
best hit. The calibrated score adds absolute evidence: how much of the question's BM25 weight the
chunk earns (words the collections never say weigh most and match nothing), and its cosine to
the question when vectors ran. The weights are a logistic fit on the dev eval's questions asked of
their own repository and of another one (`python bench/calibrate.py --profile small` prints them,
the reliability table and the threshold's precision and recall; docs/ranking.md has the figures).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from qmd_daemon.search.candidates import Candidate

FEATURES = ("relative", "answered", "similarity", "no_vectors")

# A best hit under this is more likely "nothing here" than an answer (dev eval, lexical and hybrid:
# question-level precision 0.92, recall 0.84; docs/ranking.md). SKILL.md tells agents the same.
ANSWER_THRESHOLD = 0.25


@dataclass(frozen=True)
class Calibration:
    """Weights per feature (FEATURES order), then the bias. Fitted 2026-12-01 by
    `QMD_MODELS_DIR=.test-cache/models python bench/calibrate.py --profile small` (root scope, 90
    questions x own and other repository x lexical and hybrid). MiniLM's cosine adds little beyond
    the fused position and the BM25 share; refit for other models."""

    relative: float = 3.55
    answered: float = 1.28  # the chunk's BM25 over the question's (lexical.question_idf), at most 2
    similarity: float = 0.25
    no_vectors: float = -0.35  # added when the hit has no cosine (lexical-only or not a vector hit)
    bias: float = -5.72


CALIBRATION = Calibration()


def features(cand: Candidate, top: float, question_idf: float) -> dict[str, float]:
    """`question_idf`: the BM25 a chunk earns by matching each of the question's terms once."""
    bm25 = max(cand.bm25 or 0.0, 0.0)
    return {
        "relative": max(cand.score, 0.0) / top if top > 0 else 0.0,
        "answered": min(bm25 / question_idf, 2.0) if question_idf > 0 else 0.0,
        "similarity": cand.similarity if cand.similarity is not None else 0.0,
        "no_vectors": 1.0 if cand.similarity is None else 0.0,
    }


def probability(values: dict[str, float], cal: Calibration = CALIBRATION) -> float:
    z = cal.bias + sum(getattr(cal, name) * values[name] for name in FEATURES)
    return 1.0 / (1.0 + math.exp(-z))
