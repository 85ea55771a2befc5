"""The static tier's cost on PostgreSQL beside SQLite's, in one run: the static pass, and the
static step of one search (lexical's candidates re-scored by their static vectors).

    QMD_MODELS_DIR=.test-cache/models python bench/pg_static_step.py --home HOME [--queries 40]

HOME: a bench/retrieval.py home of the dev queries' corpora (`--set queries --scope root`) with no
deep vectors (a lexical one: the static step runs where chunks lack deep vectors). The small
profile's MiniLM is the static tier's source. Both indexes are updated by this code (its
PostgreSQL one in a pgserver in the home's `pgdata-folder`, as bench/retrieval.py), and both get
the whole static pass, timed (their vectors are dropped first; the token rows a run distils are
kept in the models folder, so only a first run's SQLite pass distils). Then the first --queries
dev queries run through the product's Engine.search on both backends (one pass to warm both, then
one measured pass each), and `static_list` (search/static_list.py) is timed inside the search:
wall and CPU ms (this process's; the server's is not in it) per search, the PostgreSQL/SQLite
ratio, the statements it sent, and the whole search's wall for scale. The two backends' static
lists (chunks named by path and first line) are compared too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.pg_round_trips import StatementCounter  # noqa: E402
from bench.retrieval import EVAL_DIR, open_engine, open_postgres_engine, start_server  # noqa: E402
from qmd_daemon.search import pipeline  # noqa: E402


class StepClock:
    """Wall and CPU seconds inside pipeline.static_list, the PostgreSQL statements it sent, and the
    chunk ids of the lists it returned."""

    def __init__(self, counter: StatementCounter) -> None:
        self.wall = self.cpu = 0.0
        self.calls = self.statements = 0
        self.lists: list[list[int]] = []
        run = pipeline.static_list

        def timed(*args: Any, **kwargs: Any) -> Any:
            sent = sum(counter.counts.values())
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                ranked = run(*args, **kwargs)
            finally:
                self.wall += time.perf_counter() - wall
                self.cpu += time.process_time() - cpu
                self.calls += 1
                self.statements += sum(counter.counts.values()) - sent
            self.lists.append(list(ranked.chunk_ids) if ranked is not None else [])
            return ranked

        pipeline.static_list = timed  # type: ignore[assignment]

    def clear(self) -> None:
        self.wall = self.cpu = 0.0
        self.calls = self.statements = 0
        self.lists = []


def _paths(engine: Any, chunk_ids: list[int]) -> list[str]:
    rows = engine.store.chunks_by_ids(chunk_ids)
    return [f"{rows[i].path}:{rows[i].start_line}" for i in chunk_ids]


def _static_pass(engine: Any, label: str) -> None:
    ids = engine.collection_ids(list(engine.collections()))
    engine.backend.static.ensure("dropped-by-the-bench")  # every chunk pending: the pass runs whole
    wall, cpu = time.perf_counter(), time.process_time()
    report = engine.embed_static(ids, progress=False)
    if report is None:
        raise SystemExit(f"{label}: the static tier is unavailable ({engine.static_status()})")
    secs = time.perf_counter() - wall
    print(f"static pass {label:8}: {report['embedded']} chunks in {secs:.1f} s "
          f"({time.process_time() - cpu:.1f} s CPU, {report['distilled']} token rows distilled), "
          f"{report['embedded'] / secs if secs else 0:.0f} chunks/s; {report['pending']} pending")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    home = args.home.expanduser()
    lite = open_engine(home, "small")
    server, url = start_server(home)
    pg = open_postgres_engine(home, url)
    names = list(lite.collections())
    try:
        for engine, label in ((lite, "sqlite"), (pg, "postgres")):
            engine.update(names, progress=False)  # both indexes of this code's chunks
            _static_pass(engine, label)
        rows = [json.loads(line) for line in (EVAL_DIR / "dev-queries.jsonl").open(encoding="utf-8")]
        rows = rows[: args.queries]
        counter = StatementCounter()
        clock = StepClock(counter)

        def one_pass(engine: Any) -> tuple[float, list[list[str]]]:
            clock.clear()
            wall = time.perf_counter()
            for row in rows:
                engine.search(row["query"], [n for n in names if n.startswith(row["repo"])], 10)
            paths = [_paths(engine, ids) for ids in clock.lists]
            return (time.perf_counter() - wall) * 1000 / len(rows), paths

        for engine in (lite, pg):  # warm both: page caches, plans, token rows
            one_pass(engine)
        results = {}
        for engine, label in ((lite, "sqlite"), (pg, "postgres")):
            search_ms, paths = one_pass(engine)
            results[label] = (clock.wall * 1000 / len(rows), clock.cpu * 1000 / len(rows), search_ms, paths,
                              clock.statements, clock.calls)
    finally:
        pg.close()
        lite.close()
        server.cleanup()
    for label, (wall, cpu, search_ms, _lists, statements, calls) in results.items():
        ratio = wall / results["sqlite"][0]
        print(f"static step {label:8}: {wall:6.2f} ms wall, {cpu:6.2f} ms CPU a search ({ratio:.2f}x sqlite; "
              f"{calls} calls); whole search {search_ms:6.1f} ms"
              + (f"; {statements / len(rows):.1f} statements a static step" if label == "postgres" else ""))
    pairs = list(zip(results["sqlite"][3], results["postgres"][3], strict=True))
    same_sets = sum(set(a) == set(b) for a, b in pairs)
    print(f"static lists of {len(pairs)} searches: the same chunks {same_sets}, "
          f"in the same order {sum(a == b for a, b in pairs)}, the same top 10 in order "
          f"{sum(a[:10] == b[:10] for a, b in pairs)}")
    print(f"load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
