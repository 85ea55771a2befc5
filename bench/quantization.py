"""Recall of quantized vectors against float ones, through sqlite-vec itself.

    QMD_MODELS_DIR=... python bench/quantization.py [--home DIR] [--k 10]

Reads the float vectors of an embedded bench home (default ~/.cache/qmd-eval/home-root, filled by
`bench/retrieval.py --profile small`), copies them into an int8 vec0 table (`vec_quantize_int8`,
'unit' scale) in a temporary database with their codes derived as a migration would, and for every
dev query compares with the float exact top-k of the same collection (recall@k = |found ∩ float|
/ k): sqlite-vec's int8 KNN as is (the query quantized too: how int8 searches scored before),
the int8 index's exact_search and search (scored whole at this size, and through its codes and
rescoring as on a large index), and the float index's search. Also prints both tables' sizes and
query times, measured in this same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.retrieval import CACHE_ROOT, load_set  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=CACHE_ROOT / "home-root")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    os.environ["QMD_DAEMON_HOME"] = str(args.home)
    from qmd_daemon.engine import Engine
    from qmd_daemon.numeric import np  # after llama.cpp (why: qmd_daemon/numeric.py)
    from qmd_daemon.settings import Settings
    from qmd_daemon.store import binary_codes
    from qmd_daemon.store.index_store import IndexStore
    from qmd_daemon.store.vectors import VectorIndex

    engine = Engine(Settings.from_env())
    floats = engine.vectors
    active = floats.active_model() if floats else None
    embedder = engine.models.embedder()
    if not active or embedder is None or active[0] != embedder.fingerprint:
        print("no vectors of the configured model in that home: run bench/retrieval.py --profile small first")
        return 2
    fingerprint, dim, _q = active
    rows = engine.store.conn.execute("SELECT rowid, collection_id, vec_to_json(embedding) FROM chunk_vectors")
    rows = rows.fetchall()
    with tempfile.TemporaryDirectory() as tmp:

        def int8_index(name: str, copies_of_floats: bool) -> VectorIndex:
            """The vectors as an int8 index; codes and copies derived from the stored int8 (an
            index embedded before copies were made from floats) or made from the floats (put)."""
            store = IndexStore(Path(tmp) / f"{name}.sqlite")
            index = VectorIndex(store, quantization="int8")
            index.ensure(fingerprint, dim)
            store.conn.execute("PRAGMA foreign_keys = OFF")  # vectors and codes without chunk rows
            with store.transaction():
                store.conn.executemany(
                    "INSERT INTO chunk_vectors (rowid, collection_id, embedding) "
                    "VALUES (?, ?, vec_quantize_int8(vec_f32(?), 'unit'))",
                    rows,
                )
                if not copies_of_floats:
                    binary_codes.derive_codes(store.conn, "int8")
                    return index
                store.conn.executemany(
                    "INSERT INTO chunk_codes (chunk_id, collection_id, code, vector) VALUES (?, ?, ?, ?)",
                    [(i, c, *binary_codes.code_row(np.array(json.loads(v), np.float32))) for i, c, v in rows],
                )
            return index

        derived, of_floats = int8_index("derived", False), int8_index("floats", True)
        conn = derived.conn

        def knn_as_is(query: list[float], collection_id: int) -> list[tuple[int, float]]:
            sql = """SELECT rowid, distance FROM chunk_vectors WHERE embedding MATCH
                     vec_quantize_int8(vec_f32(?), 'unit') AND k = ? AND collection_id = ?"""
            return conn.execute(sql, (json.dumps(query), args.k, collection_id)).fetchall()

        def through_codes(
            index: VectorIndex, query: list[float], collection_id: int
        ) -> list[tuple[int, float]]:
            whole, binary_codes.FULL_SCORE_VALUES = binary_codes.FULL_SCORE_VALUES, 0  # as at 10k+ vectors
            try:
                return index.search(query, [collection_id], args.k)
            finally:
                binary_codes.FULL_SCORE_VALUES = whole

        methods = {
            "int8 sqlite-vec KNN, query quantized (before)": knn_as_is,
            "int8 exact_search": lambda q, c: derived.exact_search(q, [c], args.k),
            "int8 search, derived copies, scored whole": lambda q, c: derived.search(q, [c], args.k),
            "int8 search, derived copies, codes+rescoring": lambda q, c: through_codes(derived, q, c),
            "int8 search, copies of floats, scored whole": lambda q, c: of_floats.search(q, [c], args.k),
            "int8 search, copies of floats, codes+rescoring": lambda q, c: through_codes(of_floats, q, c),
            "float search": lambda q, c: floats.search(q, [c], args.k),
        }
        recalls: dict[str, list[float]] = {name: [] for name in methods}
        t_float, t_int8 = [], []
        for row in load_set("queries"):
            collection_id = engine.store.collection_id(f"{row['repo']}-root")
            if collection_id is None:
                continue
            query = embedder.embed_query(row["query"])
            start = time.perf_counter()
            exact = {c for c, _s in floats.exact_search(query, [collection_id], args.k)}
            t_float.append(time.perf_counter() - start)
            start = time.perf_counter()
            knn_as_is(query, collection_id)
            t_int8.append(time.perf_counter() - start)
            for name, method in methods.items():
                found = {int(c) for c, _s in method(query, collection_id)}
                recalls[name].append(len(exact & found) / max(len(exact), 1))
        derived.store.close()
        of_floats.store.close()
    engine.close()
    queries = len(t_float)
    print(
        f"{len(rows)} vectors, {dim} dims, {queries} queries; recall@{args.k} vs the float exact top {args.k}"
    )
    for name, values in recalls.items():
        print(f"  {name:48s} mean {statistics.mean(values):.3f}, min {min(values):.2f}")
    print(f"bytes per vector: float {4 * dim}, int8 {dim} (ratio {dim / (4 * dim):.2f})")
    float_ms, int8_ms = statistics.median(t_float) * 1000, statistics.median(t_int8) * 1000
    print(f"KNN p50: float {float_ms:.2f} ms, int8 {int8_ms:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
