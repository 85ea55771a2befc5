"""Filtered searches (`--path`) against unfiltered ones, same queries, same warm index, one run.

The broad set's questions, each searched in its repository's whole-tree collection: unfiltered,
with its root as a folder filter (`--path src/click/`, what an agent that knows where the code
lives says), and with an exclusion filter (tests and docs left out). Per filter: p50 wall and CPU
ms (time.process_time) after a first pass (it reads cold pages and matches the paths once), each
query's median over --passes timed passes, the ratio to unfiltered, and hit@1 / MRR of the
relevant files. `--all-collections` searches every collection of the home at once instead.

    python bench/path_filter.py --home ~/.cache/qmd-eval/home-pf-whole [--per-repo 3] [--all-collections]

Lexical only (--vectors to add them when the home is embedded).
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
EXCLUDE = ("!**/test/", "!**/tests/", "!**/__tests__/", "!**/*.test.*", "!**/*_test.*", "!**/test_*",
           "!docs/", "!**/*.md")


def load_queries(per_repo: int) -> list[dict]:
    rows = [json.loads(line) for line in (EVAL_DIR / "dev-broad-queries.jsonl").open(encoding="utf-8")]
    picked: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("root") and len(picked.setdefault(row["repo"], [])) < per_repo:
            picked[row["repo"]].append(row)
    return [row for group in picked.values() for row in group]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=Path("~/.cache/qmd-eval/home-pf-whole").expanduser())
    ap.add_argument("--per-repo", type=int, default=3)
    ap.add_argument("--all-collections", action="store_true")
    ap.add_argument("--vectors", action="store_true")
    ap.add_argument("--passes", type=int, default=3, help="timed passes after the first (default 3)")
    args = ap.parse_args()
    os.environ["QMD_DAEMON_HOME"] = str(args.home)
    from qmd_daemon.engine import Engine
    from qmd_daemon.search.pipeline import SearchOptions
    from qmd_daemon.settings import Settings

    engine = Engine(Settings.from_env())
    known = set(engine.collections())
    queries = [q for q in load_queries(args.per_repo) if q["repo"] in known]
    everything = sorted(known)
    filters = {
        "none": lambda q: (),
        "folder": lambda q: (q["root"].rstrip("/") + "/",),
        "exclude": lambda q: EXCLUDE,
    }
    results: dict[str, dict[str, list[float]]] = {}
    for name, patterns in filters.items():
        passes: list[dict[str, list[float]]] = []
        for _ in range(1 + args.passes):  # the first: cold pages, each filter's paths matched once
            wall: list[float] = []
            cpu: list[float] = []
            ranks: list[float] = []
            for q in queries:
                options = SearchOptions(paths=patterns(q), vectors=args.vectors, expand=False, rerank=False)
                scope = everything if args.all_collections else [q["repo"]]
                w0, c0 = time.perf_counter(), time.process_time()
                hits = engine.search(q["query"], scope, limit=10, options=options)
                wall.append((time.perf_counter() - w0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
                relevant = {(q["repo"], path) for path in q["relevant"]}
                found = [i for i, h in enumerate(hits) if (h.collection, h.path) in relevant]
                ranks.append(1 / (found[0] + 1) if found else 0.0)
            passes.append({"wall": wall, "cpu": cpu, "rr": ranks})
        timed = passes[1:]  # each query's median over the timed passes
        results[name] = {key: [statistics.median(p[key][i] for p in timed) for i in range(len(queries))]
                         for key in ("wall", "cpu", "rr")}
    base_wall = statistics.median(results["none"]["wall"])
    base_cpu = statistics.median(results["none"]["cpu"])
    load = os.getloadavg()
    scope = "every collection" if args.all_collections else "its repository's whole tree"
    print(f"{len(queries)} queries, each over {scope}; load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    heads = ("p50 wall ms", "ratio", "p50 cpu ms", "ratio", "hit@1", "MRR")
    print(f"{'filter':8} " + " ".join(f"{h:>{w}}" for h, w in zip(heads, (11, 6, 10, 6, 6, 6), strict=True)))
    for name, r in results.items():
        wall, cpu = statistics.median(r["wall"]), statistics.median(r["cpu"])
        hit1 = sum(1 for x in r["rr"] if x == 1.0) / len(r["rr"])
        print(f"{name:8} {wall:11.1f} {wall / base_wall:6.2f} {cpu:10.1f} {cpu / base_cpu:6.2f} "
              f"{hit1:6.3f} {statistics.mean(r['rr']):6.3f}")
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
