"""Statements per keyword search on PostgreSQL, and its time beside SQLite's in the same run.

    python bench/pg_round_trips.py --home HOME [--queries 40] [--warm]

HOME: a bench/retrieval.py home that ran `--set queries --backend postgres` (both indexes built).
Runs the first --queries dev queries, lexical only (no vectors), through the product's Engine on
both backends, and prints per backend wall and CPU ms per search (CPU: this process's; the
PostgreSQL server's is not in it), the PostgreSQL/SQLite ratio, and for PostgreSQL the statements
per search by kind. Every statement is a round trip to the server, across a network for a team.
Unless --warm, the cached document frequencies are cleared before each pass, as on the first
question about new words.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.retrieval import EVAL_DIR, open_engine, open_postgres_engine, start_server  # noqa: E402
from qmd_daemon.search.pipeline import SearchOptions  # noqa: E402
from qmd_daemon.store.postgres.connection import PostgresDatabase  # noqa: E402


class StatementCounter:
    """Counts and times the statements every PostgresDatabase runs, by their first words."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.seconds: collections.defaultdict[str, float] = collections.defaultdict(float)
        run = PostgresDatabase.execute

        def counted(
            db: PostgresDatabase, sql: str, params: Sequence[Any] | dict[str, Any] | None = None
        ) -> psycopg.Cursor[Any]:
            kind = " ".join(sql.split())[:60]
            started = time.perf_counter()
            try:
                return run(db, sql, params)
            finally:
                self.counts[kind] += 1
                self.seconds[kind] += time.perf_counter() - started

        PostgresDatabase.execute = counted  # type: ignore[method-assign, assignment]

    def clear(self) -> None:
        self.counts.clear()
        self.seconds.clear()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--warm", action="store_true", help="keep cached document frequencies")
    args = parser.parse_args()
    home = args.home.expanduser()
    lite = open_engine(home, None)
    server, url = start_server(home)
    pg = open_postgres_engine(home, url)
    rows = [json.loads(line) for line in (EVAL_DIR / "dev-queries.jsonl").open(encoding="utf-8")]
    rows = rows[: args.queries]
    names = list(lite.collections())
    counter = StatementCounter()

    def one_pass(engine: Any) -> tuple[float, float]:
        if not args.warm:
            engine.store.derived.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        for row in rows:
            scope = [n for n in names if n.startswith(row["repo"])]
            engine.search(row["query"], scope, 10, SearchOptions(vectors=False))
        n = len(rows)
        return (time.perf_counter() - wall) * 1000 / n, (time.process_time() - cpu) * 1000 / n

    try:
        for engine in (lite, pg):  # warm both: page caches, prepared plans
            one_pass(engine)
        lite_ms, lite_cpu = one_pass(lite)
        counter.clear()
        pg_ms, pg_cpu = one_pass(pg)
    finally:
        pg.close()
        lite.close()
        server.cleanup()
    print(f"sqlite      {lite_ms:7.1f} ms/search wall, {lite_cpu:6.1f} ms CPU")
    print(f"postgres    {pg_ms:7.1f} ms/search wall, {pg_cpu:6.1f} ms CPU  ({pg_ms / lite_ms:.2f}x sqlite)")
    print(f"statements  {sum(counter.counts.values()) / len(rows):.1f} per search")
    for kind, count in counter.counts.most_common():
        print(f"  {count:5d} {counter.seconds[kind] * 1000:8.0f} ms  {kind}")
    print(f"load average {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
