"""Fit the calibrated score (qmd_daemon/search/calibration.py) on the dev eval and show how well
it is calibrated: a logistic regression of "this hit's file is relevant" on the hit's features.

    python bench/calibrate.py [--profile small] [--scope root] [--home DIR]

Prints the fitted weights (paste them into `Calibration`), then a reliability table for the
weights in the code now: for hits binned by score, how many were relevant.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.metrics import path_matches  # noqa: E402
from bench.retrieval import CACHE_ROOT, DEFAULT_CORPORA, ensure_collections, load_set, open_engine, target_for  # noqa: E402
from qmd_daemon.search.calibration import CALIBRATION, Calibration, probability  # noqa: E402
from qmd_daemon.search.pipeline import SearchOptions  # noqa: E402

FEATURES = ("relative", "coverage", "similarity", "no_vectors")


def collect(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    rows = load_set("queries")
    targets = {r["repo"]: target_for(r, args.scope, args.corpora) for r in rows}
    engine = open_engine(args.home or CACHE_ROOT / f"home-{args.scope}", args.profile)
    try:
        ensure_collections(engine, list(targets.values()), skip_update=False, embed=bool(args.profile))
        feats, labels = [], []
        for row in rows:
            target = targets[row["repo"]]
            gold = list(row["relevant"]) + list(row.get("secondary", []))
            for variant in ({"vectors": False}, {}):
                options = SearchOptions(max_tokens=None, explain=True, per_file=1, **variant)
                for hit in engine.search(row["query"], [target.name], limit=10, options=options):
                    path = target.prefix + hit.path
                    feats.append([hit.explain["features"][f] for f in FEATURES])
                    labels.append(1.0 if any(path_matches(path, g) for g in gold) else 0.0)
    finally:
        engine.close()
    return np.array(feats), np.array(labels)


def fit(x: np.ndarray, y: np.ndarray, steps: int = 20000, lr: float = 0.5, l2: float = 1e-3) -> np.ndarray:
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-xb @ w))
        w -= lr * (xb.T @ (p - y) / len(y) + l2 * w)
    return w


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=["small", "qwen3"], default=None)
    parser.add_argument("--scope", choices=["root", "whole"], default="root")
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args()
    x, y = collect(args)
    w = fit(x, y)
    print(f"{len(y)} hits, {int(y.sum())} relevant")
    print("fitted: " + ", ".join(f"{n}={v:.2f}" for n, v in zip((*FEATURES, "bias"), w, strict=True)))
    current = np.array([probability(dict(zip(FEATURES, row, strict=True)), CALIBRATION) for row in x])
    fitted_cal = Calibration(*[round(float(v), 2) for v in w])
    fitted = np.array([probability(dict(zip(FEATURES, row, strict=True)), fitted_cal) for row in x])
    for label, scores in (("in code", current), ("fitted", fitted)):
        print(f"\nreliability ({label}): score bin -> hits, share relevant")
        for lo in np.arange(0, 1, 0.1):
            mask = (scores >= lo) & (scores < lo + 0.1)
            if mask.any():
                print(f"  {lo:.1f}-{lo + 0.1:.1f}: {int(mask.sum()):5d}  {y[mask].mean():.2f}")
        keep = scores >= 0.5
        precision = y[keep].mean() if keep.any() else 0.0
        recall = y[keep].sum() / max(y.sum(), 1)
        print(f"  threshold 0.5 keeps {int(keep.sum())} hits, precision {precision:.2f}, recall {recall:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
