"""Fit the calibrated score (qmd_daemon/search/calibration.py) on the dev eval and show how well
it separates an answer from "nothing here": a logistic regression of "this hit's file is
relevant" on the hit's features, over every dev question asked twice, against its own repository
and against ANOTHER repository's collection (where it has no answer: every hit there is wrong).

    python bench/calibrate.py [--profile small] [--scope root] [--home DIR] [--threshold 0.3]

Prints the fitted weights (paste them into `Calibration`), then for the weights in the code now
and the fitted ones: a reliability table (hits binned by score: how many were relevant) and the
threshold's precision and recall, per hit (kept hits that are relevant) and per question (a
question "answers" when its best hit reaches the threshold; the own-repository runs should, the
other-repository runs should not).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.metrics import path_matches  # noqa: E402
from bench.retrieval import CACHE_ROOT, DEFAULT_CORPORA, ensure_collections, load_set, open_engine, target_for  # noqa: E402
from qmd_daemon.search.calibration import ANSWER_THRESHOLD, CALIBRATION, FEATURES, Calibration, probability  # noqa: E402
from qmd_daemon.search.pipeline import SearchOptions  # noqa: E402

THRESHOLDS = (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)


@dataclass
class Hits:
    """One row per hit: features, relevance, and which run (question x target x variant) it
    came from; `own[run]` says whether that run asked the question of its own repository (a run
    may have no hits at all)."""

    x: np.ndarray
    y: np.ndarray
    run: np.ndarray
    own: np.ndarray
    hybrid: np.ndarray  # per run: vectors on


def other_repo(repo: str, repos: list[str]) -> str:
    """The next repository in sorted order: a fixed, different collection for each question."""
    return repos[(repos.index(repo) + 1) % len(repos)]


def collect(args: argparse.Namespace) -> Hits:
    rows = load_set("queries")
    targets = {r["repo"]: target_for(r, args.scope, args.corpora) for r in rows}
    repos = sorted(targets)
    engine = open_engine(args.home or CACHE_ROOT / f"home-{args.scope}", args.profile)
    variants = [{"vectors": False}] + ([{}] if args.profile else [])
    try:
        ensure_collections(engine, list(targets.values()), skip_update=args.skip_update,
                           embed=bool(args.profile))
        feats, labels, runs, owns, hybrid = [], [], [], [], []
        for row in rows:
            gold = list(row["relevant"]) + list(row.get("secondary", []))
            for repo in (row["repo"], other_repo(row["repo"], repos)):
                target, own = targets[repo], repo == row["repo"]
                for variant in variants:
                    options = SearchOptions(max_tokens=None, explain=True, per_file=1, **variant)
                    for hit in engine.search(row["query"], [target.name], limit=10, options=options):
                        path = target.prefix + hit.path
                        feats.append([hit.explain["features"][f] for f in FEATURES])
                        labels.append(1.0 if own and any(path_matches(path, g) for g in gold) else 0.0)
                        runs.append(len(owns))
                    owns.append(own)
                    hybrid.append(not variant)
    finally:
        engine.close()
    return Hits(np.array(feats), np.array(labels), np.array(runs), np.array(owns), np.array(hybrid))


def fit(x: np.ndarray, y: np.ndarray, steps: int = 20000, lr: float = 0.5, l2: float = 1e-3) -> np.ndarray:
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-xb @ w))
        w -= lr * (xb.T @ (p - y) / len(y) + l2 * w)
    return w


def report(hits: Hits, scores: np.ndarray, label: str) -> None:
    y = hits.y
    print(f"\nreliability ({label}): score bin -> hits, share relevant")
    for lo in np.arange(0, 1, 0.1):
        mask = (scores >= lo) & (scores < lo + 0.1)
        if mask.any():
            print(f"  {lo:.1f}-{lo + 0.1:.1f}: {int(mask.sum()):5d}  {y[mask].mean():.2f}")
    best = np.zeros(len(hits.own))  # a run without hits answers nothing
    np.maximum.at(best, hits.run, scores)
    own = hits.own
    print(f"  threshold -> per hit: kept, precision, recall | per question ({int(own.sum())} own, "
          f"{int((~own).sum())} other repo): precision, recall, other-repo questions with a hit")
    for t in THRESHOLDS:
        keep = scores >= t
        precision = y[keep].mean() if keep.any() else 0.0
        recall = y[keep].sum() / max(y.sum(), 1)
        answers = best >= t
        q_precision = own[answers].mean() if answers.any() else 0.0
        q_recall = answers[own].mean()
        print(f"  {t:.2f}: {int(keep.sum()):5d}  {precision:.2f}  {recall:.2f} | "
              f"{q_precision:.2f}  {q_recall:.2f}  {answers[~own].mean():.2f}")
    answers = best >= ANSWER_THRESHOLD
    for name, runs in (("lexical", ~hits.hybrid), ("hybrid", hits.hybrid)):
        if runs.any():
            kept = answers & runs
            print(f"  {name} at ANSWER_THRESHOLD {ANSWER_THRESHOLD}: per question precision "
                  f"{own[kept].mean() if kept.any() else 0.0:.2f}, recall {answers[own & runs].mean():.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=["small", "qwen3"], default=None,
                        help="also run hybrid (embeds the bench home first); default: lexical only")
    parser.add_argument("--scope", choices=["root", "whole"], default="root")
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--skip-update", action="store_true", help="search the bench home as it is")
    args = parser.parse_args()
    hits = collect(args)
    w = fit(hits.x, hits.y)
    print(f"{len(hits.y)} hits, {int(hits.y.sum())} relevant, {len(hits.own)} runs")
    print("fitted: " + ", ".join(f"{n}={v:.2f}" for n, v in zip((*FEATURES, "bias"), w, strict=True)))
    fitted_cal = Calibration(*[round(float(v), 2) for v in w])
    for label, cal in (("in code", CALIBRATION), ("fitted", fitted_cal)):
        scores = np.array([probability(dict(zip(FEATURES, row, strict=True)), cal) for row in hits.x])
        report(hits, scores, label)
    return 0


if __name__ == "__main__":
    sys.exit(main())
