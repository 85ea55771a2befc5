"""Recall of quantized vectors against float ones, through sqlite-vec itself.

    QMD_MODELS_DIR=... python bench/quantization.py [--home DIR] [--k 10]

Reads the float vectors of an embedded bench home (default ~/.cache/qmd-eval/home-root, filled by
`bench/retrieval.py --profile small`), copies them into an int8 vec0 table (`vec_quantize_int8`,
'unit' scale) in a temporary database, and for every dev query compares the int8 KNN top-k with
the float KNN top-k of the same collection: recall@k = |int8 ∩ float| / k. Also prints both
tables' sizes and query times, measured in this same run.
"""

from __future__ import annotations

import argparse
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
    from qmd_daemon.settings import Settings
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
    with tempfile.TemporaryDirectory() as tmp:
        quantized_store = IndexStore(Path(tmp) / "int8.sqlite")
        int8 = VectorIndex(quantized_store, quantization="int8")
        int8.ensure(fingerprint, dim)
        rows = engine.store.conn.execute(
            "SELECT rowid, collection_id, vec_to_json(embedding) FROM chunk_vectors"
        ).fetchall()
        conn = quantized_store.conn
        with quantized_store.transaction():  # chunk rows are not needed for KNN: insert vectors directly
            conn.executemany(
                "INSERT INTO chunk_vectors (rowid, collection_id, embedding) "
                "VALUES (?, ?, vec_quantize_int8(vec_f32(?), 'unit'))",
                rows,
            )
        recalls, t_float, t_int8 = [], [], []
        for row in load_set("queries"):
            collection_id = engine.store.collection_id(f"{row['repo']}-root")
            if collection_id is None:
                continue
            query = embedder.embed_query(row["query"])
            start = time.perf_counter()
            exact = {c for c, _s in floats.search(query, [collection_id], args.k)}
            t_float.append(time.perf_counter() - start)
            start = time.perf_counter()
            approx = {c for c, _s in int8.search(query, [collection_id], args.k)}
            t_int8.append(time.perf_counter() - start)
            recalls.append(len(exact & approx) / max(len(exact), 1))
        quantized_store.close()
    engine.close()
    print(f"{len(rows)} vectors, {dim} dims, {len(recalls)} queries")
    print(f"int8 recall@{args.k} vs float: mean {statistics.mean(recalls):.3f}, min {min(recalls):.2f}")
    print(f"bytes per vector: float {4 * dim}, int8 {dim} (ratio {dim / (4 * dim):.2f})")
    float_ms, int8_ms = statistics.median(t_float) * 1000, statistics.median(t_int8) * 1000
    print(f"KNN p50: float {float_ms:.2f} ms, int8 {int8_ms:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
