"""One table from several bench/retrieval.py --json runs, and the questions two methods disagree on.

    python bench/merge_runs.py RUN.json [RUN.json ...] [--metric ndcg@10] [--methods lexical,hybrid[,...]]
                               [--pool]

Why: the vectors of the broad set's 30 repositories live in more than one bench home (embedding
them all into one takes hours on the shared cores), so a per-language figure over all of them is
the union of several runs' questions. Each set's questions are pooled over the files (a question
measured twice, on two homes, counts twice: pass each question once), tabled per repository,
category and language with bench/retrieval.py's own grouping, and every question where the second
method scores below the first is listed with both methods' first files (the per-question ranks the
ranking notes in docs/ranking.md read), and per group the second method's mean difference with
its 95% paired bootstrap interval: a language's 20-40 questions move by a question's worth between
near-equal rankings, and the interval says whether a gap is more than that. Further methods
(variants of the second, e.g. bench/fusion_signals.py's rules) join the table, so every variant is
pooled over the same questions. `--pool` tables every set's questions as one (`pooled`): a rule
judged over the broad set, the dev queries and the held-out questions together, each language
over all of its questions.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.metrics import paired_interval  # noqa: E402
from bench.retrieval import format_comparison, group_rows  # noqa: E402

SHOWN_FILES = 3  # first files of each method printed beside a question it disagrees on


POOLED = "pooled"  # the one set's name under --pool


def pooled(paths: list[Path], methods: list[str], pool: bool = False) -> dict[str, dict[str, list[dict]]]:
    """set -> method -> its questions over every run that has both methods for that set (POOL:
    every set's under one name)."""
    out: dict[str, dict[str, list[dict]]] = {}
    for path in paths:
        sets = json.loads(path.read_text(encoding="utf-8"))["sets"]
        for set_name, by_method in sets.items():
            if not all(m in by_method for m in methods):
                continue
            for m in methods:
                out.setdefault(POOLED if pool else set_name, {}).setdefault(m, []).extend(
                    by_method[m]["queries"])
    return out


def losses(first: list[dict], second: list[dict], metric: str) -> list[tuple[dict, dict]]:
    """(first's row, second's row) of each question the second method scores lower, worst first."""
    pairs = list(zip(first, second, strict=True))
    for a, b in pairs:
        if (a["repo"], a["query"]) != (b["repo"], b["query"]):
            raise SystemExit(f"merge_runs.py: the runs list questions in different orders at {a['query']!r}")
    lower = [(a, b) for a, b in pairs if b[metric] < a[metric] - 1e-9]
    return sorted(lower, key=lambda ab: ab[1][metric] - ab[0][metric])


def verdict(lo: float, hi: float) -> str:
    """What an interval says of a difference: only one that excludes 0 is a change."""
    return "above" if lo > 0 else "below" if hi < 0 else "within noise"


def format_intervals(first: str, second: str, by_method: dict[str, list[dict]], metric: str) -> str:
    """Per group: the mean difference, in questions' worth too (n x mean: how the notes count a
    language's gap), its interval, and the questions that moved each way."""
    grouped_first, grouped_second = group_rows(by_method[first]), group_rows(by_method[second])
    w = max(22, *(len(g) + 1 for g in grouped_first))
    head = (f"{'group':<{w}}{'n':>4}{'delta':>9}{'x n':>8}{'95% interval':>20}{'up':>5}{'down':>6}"
            f"  verdict")
    lines = [f"== {second} - {first} per group ({metric}; paired bootstrap, 10,000 resamples)", head,
             "-" * len(head)]
    for g, rows in grouped_first.items():
        a = [r[metric] for r in rows]
        b = [r[metric] for r in grouped_second[g]]
        mean, lo, hi = paired_interval(a, b)
        up = sum(1 for x, y in zip(a, b, strict=True) if y > x + 1e-9)
        down = sum(1 for x, y in zip(a, b, strict=True) if y < x - 1e-9)
        interval = f"[{lo:+.3f}, {hi:+.3f}]"
        lines.append(f"{g:<{w}}{len(rows):>4}{mean:>+9.3f}{mean * len(rows):>+8.2f}{interval:>20}"
                     f"{up:>5}{down:>6}  {verdict(lo, hi)}")
    return "\n".join(lines)


def format_losses(first: str, second: str, rows: list[tuple[dict, dict]], metric: str) -> str:
    lines = [f"== questions {second} scores below {first} ({len(rows)}, {metric})"]
    for a, b in rows:
        lines.append(f"{a['repo']} {a[metric]:.3f} -> {b[metric]:.3f}  {a['query']}")
        lines.append(f"  relevant {', '.join(a['relevant'])}")
        lines.append(f"  {first}: {', '.join(a['files'][:SHOWN_FILES])}")
        lines.append(f"  {second}: {', '.join(b['files'][:SHOWN_FILES])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="bench/retrieval.py --json files")
    p.add_argument("--metric", default="ndcg@10")
    p.add_argument("--methods", default="lexical,hybrid",
                   help="the reference, the one compared, then any variants tabled beside them")
    p.add_argument("--pool", action="store_true", help="every set's questions in one table")
    args = p.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if len(methods) < 2:
        print("merge_runs.py: --methods takes two methods or more, e.g. lexical,hybrid", file=sys.stderr)
        return 2
    missing = [str(r) for r in args.runs if not r.is_file()]
    if missing:
        print(f"merge_runs.py: no such run file: {', '.join(missing)}", file=sys.stderr)
        return 2
    sets = pooled(args.runs, methods, args.pool)
    if not sets:
        print(f"merge_runs.py: no set in these runs has all of {', '.join(methods)}", file=sys.stderr)
        return 2
    for set_name, by_method in sets.items():
        print(f"\n##### {set_name} ({len(by_method[methods[0]])} questions from {len(args.runs)} runs)\n")
        print(format_comparison(set_name, by_method, args.metric))
        lower = losses(by_method[methods[0]], by_method[methods[1]], args.metric)  # checks the pairing
        print("\n" + format_intervals(methods[0], methods[1], by_method, args.metric))
        print("\n" + format_losses(methods[0], methods[1], lower, args.metric))
    return 0


if __name__ == "__main__":
    sys.exit(main())
