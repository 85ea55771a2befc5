"""CPU cost of schema v7's older-writer guard (store/schema.refuse_older_writers): one trigger per
INSERT, UPDATE and DELETE on `files`, each calling qmd_writer_schema() once per row.

    python bench/writer_guard.py [--rows 20000] [--rounds 3]

Each round inserts, updates and deletes ROWS `files` rows in one transaction on a fresh index,
guarded (as the code runs) and with the guard's triggers dropped (the baseline), alternating, and
prints CPU ms (time.process_time) of each and their ratio.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from qmd_daemon.store import schema
from qmd_daemon.store.index_store import IndexStore

INSERT = """INSERT INTO files (collection_id, path, size, mtime_ns, hash, language, kind, line_count)
            VALUES (?, ?, 1, 1, 'h', NULL, 'code', 1)"""


def one_round(rows: int, guarded: bool) -> float:
    """CPU seconds of ROWS inserts, one UPDATE and one DELETE of them all."""
    with tempfile.TemporaryDirectory() as folder:
        store = IndexStore(Path(folder) / "index.sqlite")
        conn = store.conn
        if not guarded:
            for table, event in schema._GUARDED:
                conn.execute(f"DROP TRIGGER older_writer_guard_{table}_{event.lower()}")
        collection = conn.execute("INSERT INTO collections (name, root) VALUES ('c', '/c')").lastrowid
        started = time.process_time()
        with store.transaction():
            conn.executemany(INSERT, [(collection, f"f{i}") for i in range(rows)])
            conn.execute("UPDATE files SET size = 2")
            conn.execute("DELETE FROM files")
        spent = time.process_time() - started
        store.close()
        return spent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; {args.rows} rows inserted, updated and deleted")
    for _ in range(args.rounds):
        guarded, plain = one_round(args.rows, True), one_round(args.rows, False)
        per_row = (guarded - plain) / (3 * args.rows) * 1e6
        print(
            f"guarded {guarded * 1000:.0f} ms CPU, without the guard {plain * 1000:.0f} ms CPU: "
            f"x{guarded / plain:.2f}, {per_row:+.2f} us a row written"
        )


if __name__ == "__main__":
    main()
