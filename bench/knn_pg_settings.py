"""pgvector search settings compared on bench/knn_backends.py's sets (its PostgreSQL data dir and
SQLite files, built there first): each SPEC is one scope walked through the HNSW graph with an
ef_search (and optionally hnsw.max_scan_tuples and an inner LIMIT larger than k: pgvector's
re-ranking pattern), or compared exactly; p50 (wall, and this process's CPU) and recall@10
against the float top 10, all in one run, each p50 also as a ratio of the first SPEC's. How
EF_SEARCH_*, ROWS_PER_CANDIDATE and the exact path's bounds in store/postgres/vectors.py were
chosen.

    nice -n 10 python bench/knn_pg_settings.py --size 1000000 all:400 all:1000 all:1000::2000 \\
        large:1000 small:exact two:1000 two:exact

Scopes: all (30 collections), large (collection 1, half), small (collection 7, 1.7%), two
(collections 2-3, 3.4%), four (2-5, 6.9%), mid (2-7, 10%). SPEC is SCOPE:exact or
SCOPE:EF[:MAX_SCAN_TUPLES[:LIMIT]].
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.knn import COLLECTIONS, _queries, float_top10  # noqa: E402
from bench.knn_backends import QUANTIZATION, _database, _recall, start_server  # noqa: E402
from qmd_daemon.store.index_store import IndexStore  # noqa: E402
from qmd_daemon.store.postgres.connection import PostgresDatabase  # noqa: E402
from qmd_daemon.store.postgres.vectors import vector_literal  # noqa: E402

SCOPES = {
    "all": list(range(1, COLLECTIONS + 1)),
    "large": [1],
    "small": [7],
    "two": [2, 3],
    "four": [2, 3, 4, 5],
    "mid": list(range(2, 8)),
}


def nearest(db: PostgresDatabase, query: list[float], ids: list[int], k: int, spec: list[str]) -> list[int]:
    """The top k chunk ids of the scope under SPEC's settings (the query of PostgresVectorIndex)."""
    if spec[0] == "exact":
        settings, limit = [("enable_indexscan", "off")], k
    else:
        settings = [
            ("hnsw.iterative_scan", "relaxed_order"),
            ("hnsw.ef_search", spec[0]),
            ("enable_bitmapscan", "off"),
            ("enable_seqscan", "off"),
        ]
        if len(spec) > 1 and spec[1]:
            settings.append(("hnsw.max_scan_tuples", spec[1]))
        limit = int(spec[2]) if len(spec) > 2 else k
    with db.transaction():
        for name, value in settings:
            db.execute("SELECT set_config(%s, %s, true)", (name, value))
        rows = db.execute(
            """WITH hits AS MATERIALIZED (
                   SELECT chunk_id, embedding <=> %(q)s::halfvec AS distance FROM chunk_vectors
                   WHERE collection_id = ANY(%(ids)s) ORDER BY embedding <=> %(q)s::halfvec LIMIT %(n)s)
               SELECT chunk_id FROM hits ORDER BY distance LIMIT %(k)s""",
            {"q": vector_literal(query), "ids": ids, "n": limit, "k": k},
        ).fetchall()
    return [int(r[0]) for r in rows]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--size", type=int, default=1000000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "qmd-eval" / "knn-backends")
    parser.add_argument("--pgdata", type=Path, default=Path("/var/tmp/qmd-eval-knn-backends"))
    args = parser.parse_args()
    store = IndexStore(args.cache / f"{args.size}x{args.dim}-{QUANTIZATION}.sqlite")
    store.conn.execute("PRAGMA foreign_keys = OFF")
    queries = _queries(store, args.dim, args.queries, QUANTIZATION)
    specs = [spec.split(":") for spec in args.specs]
    scopes = sorted({spec[0] for spec in specs})
    asked = [(SCOPES[scope], q) for scope in scopes for q in queries]
    top10 = float_top10(store, args.size, args.dim, QUANTIZATION, asked)
    truth = {scope: top10[n * args.queries : (n + 1) * args.queries] for n, scope in enumerate(scopes)}
    db = _database(start_server(args.pgdata), f"knn_{args.size}_{args.dim}")
    baseline = 0.0  # the first spec's p50: the others as a ratio of it
    for scope, *spec in specs:
        ids = SCOPES[scope]
        nearest(db, queries[0].tolist(), ids, args.k, spec)  # the pages it reads, once
        walls, cpus, found = [], [], []
        for query in queries:
            wall, cpu = time.perf_counter(), time.process_time()
            found.append(nearest(db, query.tolist(), ids, args.k, spec))
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
        p50 = statistics.median(walls)
        baseline = baseline or p50
        print(
            f"{scope:<6} {':'.join(spec):<16} p50 {p50:8.1f} ms (x{p50 / baseline:5.2f} the first)"
            f" (client CPU {statistics.median(cpus):5.1f} ms)  recall@10 {_recall(truth[scope], found):.3f}"
            f"  load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
