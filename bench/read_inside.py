"""What reading only from inside a collection's root costs: every file of bench/ingest.py's
generated tree read the old way (`Path.read_bytes`, no check) and through `read_inside` (open, then
where the opened file really is), interleaved in rounds; the writer lock's take-and-release that
every update and embed batch now pays; and one full `update` of the tree, to size both against.

    python bench/read_inside.py [--files 3000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.ingest import generate_tree  # noqa: E402
from qmd_daemon.engine import Engine  # noqa: E402
from qmd_daemon.ingest.source_text import read_inside  # noqa: E402
from qmd_daemon.locks import waiting_for  # noqa: E402
from qmd_daemon.settings import Settings  # noqa: E402


def _time(fn, items) -> float:  # noqa: ANN001 - a callable over the items
    started = time.perf_counter()
    for item in items:
        fn(item)
    return time.perf_counter() - started


def _take_and_release(lock: Path) -> None:
    with waiting_for(lock, "bench"):
        pass


def _full_update(root: Path, home: Path) -> float:
    """Seconds of one first `update` of the tree (everything read, chunked, written)."""
    os.environ["QMD_DAEMON_HOME"] = str(home)
    engine = Engine(Settings.from_env())
    try:
        name = engine.add_collection(root).name
        started = time.perf_counter()
        engine.update([name], progress=False)
        return time.perf_counter() - started
    finally:
        engine.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qmd-read-bench-") as tmp:
        root = Path(tmp, "tree").resolve()
        rels = generate_tree(root, args.files)
        old, new, locks = [], [], []
        lock = Path(tmp, "index.sqlite.writer.lock")
        for _ in range(args.rounds):
            old.append(_time(lambda rel: (root / rel).read_bytes(), rels))
            new.append(_time(lambda rel: read_inside(root, rel, 1 << 20), rels))
            locks.append(_time(lambda _: _take_and_release(lock), range(200)) / 200)
        per_old = statistics.median(old) / len(rels) * 1e6
        per_new = statistics.median(new) / len(rels) * 1e6
        print(f"files {len(rels)}, rounds {args.rounds} (medians)")
        print(f"read_bytes (old)   {per_old:7.1f} us/file")
        print(f"read_inside (new)  {per_new:7.1f} us/file   ratio {per_new / per_old:.2f}x")
        print(f"writer lock take   {statistics.median(locks) * 1e6:7.1f} us (take + release)")
        per_update = _full_update(root, Path(tmp, "home")) / len(rels) * 1e6
        print(f"full update        {per_update:7.1f} us/file: the added read cost is "
              f"{(per_new - per_old) / per_update:.1%} of it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
