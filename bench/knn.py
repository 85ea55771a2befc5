"""KNN latency and recall at scale: sqlite-vec's exact KNN (the old path) against binary codes
then rescoring (VectorIndex.search), same index, same queries, same run.

    python bench/knn.py --sizes 10000,100000,1000000 --dim 1024 --quantization int8

Synthetic vectors: 2,000 cluster centres, each vector a centre plus noise (normalized), over 30
collections (one holds half the vectors); a query is a stored vector plus noise, so it has true
near neighbours as real questions do (uniform random vectors have none, and every method's
recall on them is noise). Each tier's index is built once into --cache (outside the repository)
and reused. Prints, per tier, p50 ms for k=100 on all collections and on the large one, and
recall@10 against the float top 10 (numpy: the float query against the float vectors the stored
ones came from, regenerated from the build's seeds) of: sqlite-vec's KNN as it is (an int8
index's query quantized as its vectors: how every int8 search scored before), exact_search, and
search twice on an int8 index: with the codes and copies derived from the stored vectors (an
index embedded before copies were made from the float vectors: the migration derives them so),
then with them made from the float vectors, as VectorIndex.put makes them. The cache is
migrated by the code that opens it: point --cache at your own copy. --hamming also times the
scan alone over all the tier's codes: the first version's row blocks + argpartition against the
column-major scan + histogram cut that binary_codes uses now.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from qmd_daemon.store.binary_codes import _words, closest, code_row, derive_codes, hamming  # noqa: E402
from qmd_daemon.store.connection import connect  # noqa: E402
from qmd_daemon.store.index_store import IndexStore  # noqa: E402
from qmd_daemon.store.schema import current_version, migrate  # noqa: E402
from qmd_daemon.store.vectors import VectorIndex  # noqa: E402

COLLECTIONS = 30
CENTRES = 2000
NOISE = 0.6  # per-dimension noise relative to a centre's: neighbours at cosine ~0.7-0.8
BATCH = 20000


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _centres(dim: int) -> np.ndarray:
    return _unit(np.random.default_rng(7).standard_normal((CENTRES, dim)))


def _collection_of(rowid: np.ndarray) -> np.ndarray:
    """Collection 1 holds every other vector, 2..30 share the rest."""
    return np.where(rowid % 2 == 0, 1, 2 + (rowid // 2) % (COLLECTIONS - 1))


def _float_batches(size: int, dim: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(rowids, unit float vectors) of a tier, batch by batch, the same on every call (seeded)."""
    centres, rng = _centres(dim), np.random.default_rng(1)
    for start in range(0, size, BATCH):
        n = min(BATCH, size - start)
        noise = NOISE * rng.standard_normal((n, dim)) / np.sqrt(dim)
        yield np.arange(start + 1, start + n + 1), _unit(centres[rng.integers(0, CENTRES, n)] + noise)


def _open(path: Path) -> IndexStore:
    """The tier's IndexStore, with foreign keys off (its vectors and codes have no chunk rows: only
    KNN is measured), its schema migrated so too; prints what a migration cost."""
    if path.exists():
        conn, _vec = connect(path)
        conn.execute("PRAGMA foreign_keys = OFF")
        started, version = time.perf_counter(), current_version(conn)
        migrate(conn, str(path))
        if version != current_version(conn):
            print(f"  schema {version} -> {current_version(conn)} in {time.perf_counter() - started:.1f} s")
        conn.close()
    store = IndexStore(path)
    store.conn.execute("PRAGMA foreign_keys = OFF")
    return store


def build(path: Path, size: int, dim: int, quantization: str) -> IndexStore:
    store = _open(path)
    vectors = VectorIndex(store, quantization=quantization)
    if store.conn.execute("SELECT value FROM meta WHERE key = 'bench_built'").fetchone():
        return store
    started = time.perf_counter()
    vectors.ensure("bench-synthetic", dim)
    conn = store.conn
    for ids, rows in _float_batches(size, dim):
        cols = _collection_of(ids)
        with store.transaction():
            conn.executemany(
                "INSERT INTO chunk_vectors (rowid, collection_id, embedding) "
                f"VALUES (?, ?, {_encode(quantization)})",
                [(int(i), int(c), r.tobytes()) for i, c, r in zip(ids, cols, rows, strict=True)],
            )
    with store.transaction():  # the codes as the migration derives them from stored vectors
        derive_codes(conn, quantization)
        conn.execute("INSERT INTO meta (key, value) VALUES ('bench_built', '1')")
    print(f"  built {size} x {dim} {quantization} in {time.perf_counter() - started:.0f} s", flush=True)
    return store


def _encode(quantization: str) -> str:
    return "vec_quantize_int8(?, 'unit')" if quantization == "int8" else "?"


def float_top10(
    store: IndexStore, size: int, dim: int, quantization: str, asked: list[tuple[list[int], np.ndarray]]
) -> list[set[int]]:
    """Rowids of each (collections, query)'s float top 10 within its collections, in one pass
    over the regenerated vectors (checked against the stored first one: the same build)."""
    best_ids = [np.empty(0, dtype=np.int64) for _ in asked]
    best_scores = [np.empty(0, dtype=np.float32) for _ in asked]
    queries = np.stack([q for _ids, q in asked]).T
    for ids, rows in _float_batches(size, dim):
        if ids[0] == 1:
            stored = store.conn.execute("SELECT embedding FROM chunk_vectors WHERE rowid = 1").fetchone()[0]
            again = store.conn.execute(f"SELECT {_encode(quantization)}", (rows[0].tobytes(),)).fetchone()[0]
            assert stored == again, "the cached index is not this build's: delete it"
        scores, cols = rows @ queries, _collection_of(ids)
        for n, (collections, _q) in enumerate(asked):
            inside = np.isin(cols, collections)
            best_ids[n] = np.concatenate([best_ids[n], ids[inside]])
            best_scores[n] = np.concatenate([best_scores[n], scores[inside, n]])
            keep = np.argsort(-best_scores[n], kind="stable")[:10]
            best_ids[n], best_scores[n] = best_ids[n][keep], best_scores[n][keep]
    return [{int(i) for i in ids} for ids in best_ids]


def read_through(path: Path) -> None:
    """Bring the index file into the OS page cache, as the daemon's start-up quick_check does:
    rescoring reads ~400 random rows, and each one not cached is a disk read (on this machine's
    disk, ~70 MB/s, that made a rescoring 0.2-0.6 s instead of 2 ms)."""
    started = time.perf_counter()
    with path.open("rb") as f:
        while f.read(1 << 24):
            pass
    print(f"  read the index file through (page cache) in {time.perf_counter() - started:.1f} s", flush=True)


def _queries(store: IndexStore, dim: int, count: int, quantization: str) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    size = store.conn.execute("SELECT max(chunk_id) FROM chunk_codes").fetchone()[0]
    picked = rng.integers(1, size + 1, count)
    out = []
    for rowid in picked:
        sql = "SELECT embedding FROM chunk_vectors WHERE rowid = ?"
        blob = store.conn.execute(sql, (int(rowid),)).fetchone()[0]
        base = np.frombuffer(blob, dtype=np.int8 if quantization == "int8" else np.float32).astype(np.float32)
        base /= np.linalg.norm(base)
        out.append(_unit((base + 0.5 * rng.standard_normal(dim) / np.sqrt(dim))[None, :])[0])
    return out


def _timed(fn, *args) -> tuple[float, list[int]]:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    hits = fn(*args)
    return (time.perf_counter() - start) * 1000, [h[0] for h in hits]


def _sqlite_vec_knn(
    store: IndexStore, quantization: str, query: np.ndarray, ids: list[int], k: int
) -> list[tuple[int]]:
    """sqlite-vec's KNN with the query encoded as the vectors are: the old exact_search."""
    marks = ",".join("?" * len(ids))
    return store.conn.execute(
        f"""SELECT rowid FROM chunk_vectors WHERE embedding MATCH {_encode(quantization)}
            AND k = ? AND collection_id IN ({marks}) ORDER BY distance""",
        (query.tobytes(), k, *ids),
    ).fetchall()


def copies_from_floats(store: IndexStore, size: int, dim: int) -> None:
    """Every code row made again from the build's float vectors, as VectorIndex.put makes it."""
    started = time.perf_counter()
    with store.transaction():
        for ids, rows in _float_batches(size, dim):
            store.conn.executemany(
                "INSERT OR REPLACE INTO chunk_codes (chunk_id, collection_id, code, vector) "
                "VALUES (?, ?, ?, ?)",
                [
                    (int(i), int(c), *code_row(r))
                    for i, c, r in zip(ids, _collection_of(ids), rows, strict=True)
                ],
            )
        store.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('bench_copies_of_floats', '1')")
    print(
        f"  codes and copies made from the float vectors in {time.perf_counter() - started:.0f} s", flush=True
    )


def measure(store: IndexStore, size: int, dim: int, quantization: str, queries: int, k: int) -> None:
    vectors = VectorIndex(store, quantization=quantization)
    every = list(range(1, COLLECTIONS + 1))
    scopes = (("all 30 collections", every), ("one collection (the large one)", [1]))
    asked = [(ids, q) for _scope, ids in scopes for q in _queries(store, dim, queries, quantization)]
    started = time.perf_counter()
    truth = float_top10(store, size, dim, quantization, asked)
    print(f"  float top 10 of {len(asked)} queries in {time.perf_counter() - started:.0f} s", flush=True)
    if store.conn.execute("SELECT 1 FROM meta WHERE key = 'bench_copies_of_floats'").fetchone():
        started = time.perf_counter()  # an earlier run's last pass left them so
        with store.transaction():
            derive_codes(store.conn, quantization)
            store.conn.execute("DELETE FROM meta WHERE key = 'bench_copies_of_floats'")
        print(f"  codes and copies derived from the stored vectors in {time.perf_counter() - started:.0f} s")

    def search(q: np.ndarray, ids: list[int]) -> list[tuple[int, float]]:
        return vectors.search(q.tolist(), ids, k)

    passes = [
        {
            "sqlite-vec KNN as is": lambda q, ids: _sqlite_vec_knn(store, quantization, q, ids, k),
            "exact_search": lambda q, ids: vectors.exact_search(q.tolist(), ids, k),
            "search, derived copies": search,
        }
    ]
    if quantization == "int8":  # a float index's derived copies are the same as put's
        passes.append({"search, copies of floats": search})
    lines: dict[str, list[str]] = {scope: [] for scope, _ids in scopes}
    base: dict[str, float] = {}
    for methods in passes:
        if "search, copies of floats" in methods:
            copies_from_floats(store, size, dim)
        for n, (scope, ids) in enumerate(scopes):
            load_ms, _ = _timed(vectors.search, asked[n * queries][1].tolist(), ids, k)  # loads the codes
            lines[scope].append(f"first search loads codes: {load_ms:.0f} ms")
            for name, method in methods.items():
                timings, recalls = [], []
                for at in range(n * queries, (n + 1) * queries):
                    ms, found = _timed(method, asked[at][1], ids)
                    timings.append(ms)
                    recalls.append(len(truth[at] & set(found[:10])) / 10)
                p50 = statistics.median(timings)
                base.setdefault(scope, p50)  # sqlite-vec's KNN: the first method
                lines[scope].append(
                    f"{name:26s} p50 {p50:7.1f} ms (x{base[scope] / p50:5.1f} of sqlite-vec's) | recall@10 "
                    f"vs float top 10 mean {statistics.mean(recalls):.3f} min {min(recalls):.1f}"
                )
    for scope, printed in lines.items():
        print(f"  {scope}:\n    " + "\n    ".join(printed), flush=True)


def _row_block_scan(rows: np.ndarray, query: np.ndarray, count: int) -> np.ndarray:
    """The first version's scan (the baseline): (codes, words) rows XORed and popcounted in
    blocks of 16,384, summed along each row, then argpartition."""
    out = np.empty(len(rows), dtype=np.uint16)
    for start in range(0, len(rows), 16384):
        block = np.bitwise_count(np.bitwise_xor(rows[start : start + 16384], query))
        block.sum(axis=1, dtype=np.uint16, out=out[start : start + 16384])
    return np.argpartition(out, count)[:count]


def measure_hamming(store: IndexStore, repeats: int = 7, count: int = 400) -> None:
    codes = [r[0] for r in store.conn.execute("SELECT code FROM chunk_codes")]
    columns = _words(b"".join(codes), len(codes))
    rows = np.ascontiguousarray(columns.T)
    old_ms, new_ms = [], []
    for n in range(repeats):
        query = columns[:, n * 7919 % len(codes)]
        start = time.perf_counter()
        picked_old = _row_block_scan(rows, query, count)
        middle = time.perf_counter()
        distances = hamming(columns, query)
        picked_new = closest(distances, count)
        old_ms.append((middle - start) * 1000)
        new_ms.append((time.perf_counter() - middle) * 1000)
        assert distances[picked_old].max() == distances[picked_new].max()  # the same cut
    old, new = statistics.median(old_ms), statistics.median(new_ms)
    print(
        f"  Hamming scan + top {count} of {len(codes)} codes: row blocks + argpartition p50 {old:.1f} ms"
        f" | column-major + histogram p50 {new:.1f} ms (x{old / new:.1f} faster)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--quantization", choices=("int8", "float"), default="int8")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--hamming", action="store_true", help="also time the code scan alone")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "qmd-eval" / "knn-bench")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    for size in (int(s) for s in args.sizes.split(",")):
        print(f"{size} x {args.dim} {args.quantization}, k={args.k}, {args.queries} queries", flush=True)
        path = args.cache / f"{size}x{args.dim}-{args.quantization}.sqlite"
        store = build(path, size, args.dim, args.quantization)
        read_through(path)
        measure(store, size, args.dim, args.quantization, args.queries, args.k)
        if args.hamming:
            measure_hamming(store)
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
