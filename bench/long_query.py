"""A 20,000-character query (a bug report with its logs) against the short question it grew from,
same pipeline, same warm models, one run. Target (issue 4): long p50 <= 2x short p50.

Each long query is a dev-eval question as the title, followed by the body of the longest real bug
report in the eval (dev-issues.jsonl), cut to 20,000 characters: the shape an agent pastes.

    python bench/long_query.py [--home DIR] [--queries 12] [--rerank-candidates 8] [--budget-ms 0]

--home defaults to the root-scope bench home of bench/retrieval.py (~/.cache/qmd-eval/home-root,
embedded with the small profile). --budget-ms 0 runs every model step in full (no latency budget),
which is what shows the cost of a long query; the default pipeline's budget would hide it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

EVAL_DIR = Path(os.environ.get("QMD_EVAL_DIR", "/work/shared/eval"))
LONG_CHARS = 20_000


def load_queries(n: int) -> tuple[list[tuple[str, str]], str]:
    """(query, collection) pairs spread over the repos, and the longest bug report's body."""
    rows = [json.loads(line) for line in (EVAL_DIR / "dev-queries.jsonl").open(encoding="utf-8")]
    by_repo: dict[str, list[dict]] = {}
    for row in rows:
        by_repo.setdefault(row["repo"], []).append(row)
    picked: list[tuple[str, str]] = []
    while len(picked) < n and any(by_repo.values()):
        for repo, items in by_repo.items():
            if items and len(picked) < n:
                picked.append((items.pop(0)["query"], f"{repo}-root"))
    issues = [json.loads(line) for line in (EVAL_DIR / "dev-issues.jsonl").open(encoding="utf-8")]
    body = max((i["query"] for i in issues), key=len)
    return picked, body.split("\n", 1)[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=Path("~/.cache/qmd-eval/home-root").expanduser())
    ap.add_argument("--queries", type=int, default=12)
    ap.add_argument("--rerank-candidates", type=int, default=8)
    ap.add_argument("--budget-ms", type=float, default=0.0, help="0: no latency budget")
    args = ap.parse_args()
    os.environ["QMD_DAEMON_HOME"] = str(args.home)
    from qmd_daemon.engine import Engine
    from qmd_daemon.search.pipeline import SearchOptions, SearchTrace
    from qmd_daemon.settings import Settings

    engine = Engine(Settings.from_env())
    engine.models.cache = None  # measure the models, not an earlier run's cached answers
    options = SearchOptions(expand=True, rerank=True, rerank_candidates=args.rerank_candidates,
                            budget_ms=args.budget_ms or None, max_tokens=None)
    queries, body = load_queries(args.queries)
    engine.search("warm up the search path", [queries[0][1]], options=options)
    times: dict[str, list[float]] = {"short": [], "long": []}
    steps: dict[str, list[dict[str, float]]] = {"short": [], "long": []}
    for query, collection in queries:
        long_query = (query + "\n" + body)[:LONG_CHARS]
        for kind, text in (("short", query), ("long", long_query)):
            trace = SearchTrace()
            t0 = time.perf_counter()
            engine.search(text, [collection], limit=10, options=options, trace=trace)
            times[kind].append(time.perf_counter() - t0)
            steps[kind].append(trace.timings_ms)
    engine.close()
    p50 = {k: statistics.median(v) for k, v in times.items()}
    print(f"{len(queries)} queries, long = {LONG_CHARS} chars, rerank {args.rerank_candidates}, "
          f"budget {'none' if not args.budget_ms else f'{args.budget_ms:g} ms'}")
    for kind in ("short", "long"):
        step_p50 = {s: round(statistics.median(t.get(s, 0.0) for t in steps[kind]))
                    for s in ("lexical", "expand", "vector", "rerank")}
        print(f"  {kind:5s} p50 {p50[kind] * 1000:8.0f} ms  max {max(times[kind]) * 1000:8.0f} ms  "
              f"steps p50 {step_p50}")
    print(f"  ratio long/short p50: {p50['long'] / p50['short']:.2f} (target <= 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
