"""Scoring for the dev retrieval eval (/work/shared/eval/README.md).

- Hits are reduced to files keeping the first occurrence; the top 10 files are scored.
- A path matches a gold path when the two are equal or one ends with "/" + the other.
- NDCG@10 is binary: relevance 1 for any path in `relevant` or `secondary`; the ideal DCG is that of
  min(10, number of gold paths) ones. Each gold path is credited at most once, so NDCG <= 1.
- Acc@k: 1 if every `relevant` path is in the top k. MRR@10: 1 / rank of the first `relevant` path.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np


def path_matches(a: str, b: str) -> bool:
    a = a.strip("/")
    b = b.strip("/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def reduce_to_files(paths: Iterable[str]) -> list[str]:
    """Distinct paths in first-occurrence order (hits are per chunk; several per file)."""
    seen: set[str] = set()
    out: list[str] = []
    for p in paths:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def _first_match(path: str, gold: Sequence[str], used: set[int]) -> int | None:
    for i, g in enumerate(gold):
        if i not in used and path_matches(path, g):
            return i
    return None


def ndcg_at_k(ranked: Sequence[str], gold: Sequence[str], k: int = 10) -> float:
    gold = list(dict.fromkeys(gold))
    if not gold:
        return 0.0
    used: set[int] = set()
    dcg = 0.0
    for i, path in enumerate(ranked[:k], start=1):
        j = _first_match(path, gold, used)
        if j is not None:
            used.add(j)
            dcg += 1.0 / math.log2(i + 1)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(k, len(gold)) + 1))
    return dcg / ideal


def rank_of(ranked: Sequence[str], target: str, k: int | None = None) -> int | None:
    """1-based rank of the first path matching `target` within the top k, else None."""
    for i, path in enumerate(ranked[:k] if k else ranked, start=1):
        if path_matches(path, target):
            return i
    return None


def acc_at_k(ranked: Sequence[str], relevant: Sequence[str], k: int) -> float:
    if not relevant:
        return 0.0
    return float(all(rank_of(ranked, r, k) is not None for r in relevant))


def mrr_at_k(ranked: Sequence[str], relevant: Sequence[str], k: int = 10) -> float:
    ranks = [r for r in (rank_of(ranked, g, k) for g in relevant) if r is not None]
    return 1.0 / min(ranks) if ranks else 0.0


def score_query(ranked_hits: Sequence[str], relevant: Sequence[str], secondary: Sequence[str] = (),
                k: int = 10) -> dict[str, float]:
    """All metrics for one query; `ranked_hits` may repeat files (they are reduced first)."""
    files = reduce_to_files(ranked_hits)[:k]
    return {
        "ndcg@10": ndcg_at_k(files, list(relevant) + list(secondary), k),
        "acc@1": acc_at_k(files, relevant, 1),
        "acc@5": acc_at_k(files, relevant, 5),
        "acc@10": acc_at_k(files, relevant, 10),
        "mrr@10": mrr_at_k(files, relevant, k),
    }


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100); 0.0 for an empty list."""
    if not values:
        return 0.0
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


METRIC_KEYS = ("ndcg@10", "acc@1", "acc@5", "acc@10", "mrr@10")


def aggregate(rows: Sequence[dict]) -> dict[str, float]:
    """Mean of each metric over rows (dicts with METRIC_KEYS and 'ms'), plus n, p50 and p95 latency."""
    out: dict[str, float] = {"n": float(len(rows))}
    for key in METRIC_KEYS:
        out[key] = sum(r[key] for r in rows) / len(rows) if rows else 0.0
    ms = [r["ms"] for r in rows if "ms" in r]
    out["p50_ms"] = percentile(ms, 50)
    out["p95_ms"] = percentile(ms, 95)
    return out


def paired_interval(first: Sequence[float], second: Sequence[float], samples: int = 10_000,
                    level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """Mean of second - first over paired questions, with its bootstrap interval (questions resampled
    with replacement; percentile interval at `level`). Why: a language's 20-40 questions move by a
    question's worth between two near-equal rankings, and whether a gap is more than that decides
    what a rule is kept for. Seeded, so a table prints the same interval on every run."""
    if len(first) != len(second):
        raise ValueError("paired_interval: the two lists hold different numbers of questions")
    if not first:
        return 0.0, 0.0, 0.0
    deltas = np.asarray(second, dtype=float) - np.asarray(first, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(deltas), size=(samples, len(deltas)))
    means = deltas[picks].mean(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return float(deltas.mean()), float(lo), float(hi)
