"""CPU cost of counting every chunk's terms (store/term_stats.fill: the schema-4 migration, and
what keeping the counts at write time costs in bulk), this checkout against another one, on one
index, each run in its own process inside a transaction that is rolled back (the file is left as
it was; still, pass a copy).

    python bench/term_count_fill.py --index COPY.sqlite --baseline /path/to/other/checkout
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from qmd_daemon.store.connection import sqlite
from qmd_daemon.store import term_stats
conn = sqlite.connect(sys.argv[2], isolation_level=None)
chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
conn.execute("BEGIN IMMEDIATE")
wall, cpu = time.perf_counter(), time.process_time()
term_stats.fill(conn)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
rows, total = conn.execute("SELECT count(*), coalesce(sum(df), 0) FROM term_stats").fetchone()
conn.execute("ROLLBACK")
print(json.dumps({"chunks": chunks, "wall": wall, "cpu": cpu, "rows": rows, "df_total": total}))
"""


def run(checkout: Path, index: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(checkout), str(index)],
        check=True, capture_output=True, text=True, env={"TQDM_DISABLE": "1", "PATH": "/usr/bin:/bin"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", type=Path, required=True, help="an index.sqlite (a copy)")
    p.add_argument("--baseline", type=Path, required=True, help="another checkout of qmd-daemon")
    p.add_argument("--repeat", type=int, default=1, help="alternating pairs")
    args = p.parse_args(argv)
    if not args.index.is_file():
        print(f"no index at {args.index}", file=sys.stderr)
        return 2
    results: dict[str, list[dict[str, float]]] = {"baseline": [], "this": []}
    for _ in range(args.repeat):
        results["baseline"].append(run(args.baseline, args.index))
        results["this"].append(run(REPO_ROOT, args.index))
    with open("/proc/loadavg", encoding="ascii") as fh:
        load = fh.read().split()[0]
    for name, runs in results.items():
        for r in runs:
            print(f"{name:<9} {r['chunks']} chunks: {r['cpu']:.1f} s CPU, {r['wall']:.1f} s wall, "
                  f"{r['rows']} rows, df total {r['df_total']}")
    base = sum(r["cpu"] for r in results["baseline"])
    this = sum(r["cpu"] for r in results["this"])
    print(f"CPU this / baseline = {this / base:.2f} (load {load}, {time.strftime('%H:%M')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
