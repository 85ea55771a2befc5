"""How soon the deep embedder reaches a file just edited: chunk-id order (before) against the
priority order (store/pending_order.py), in one run; and what reading that order costs.

    python bench/embed_priority.py [--corpus ~/.cache/qmd-eval/corpora/pydantic/pydantic]
        [--other ~/.cache/qmd-eval/corpora/aiohttp/aiohttp] [--scale-home HOME_COPY]

1. Copies the two corpora into a temporary folder, indexes them (the other one first, so it holds
   the lower chunk ids) in a temporary home with the small profile, nothing embedded yet (a fresh
   install, or a model change), edits one file of the corpus (the current repository), refreshes.
   Counts the batches each order embeds before the edited file has all its vectors: chunk-id
   order from `ORDER BY c.id` (what `pending` was), the new one from `pending` itself; then embeds
   the new order's batches for real (MiniLM through llama.cpp) and checks the file has them.
2. With --scale-home (a COPY of a bench home: it gets an empty vector table of a probe model), the
   `pending` read of one window (vectorize.WINDOW chunks) at that size, without and with 2,000
   returned files, against the old whole-list read and one embed batch timed in this run.
Wall and CPU (time.process_time) ms, and the load average.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qmd_daemon.engine import Engine  # noqa: E402
from qmd_daemon.settings import Settings  # noqa: E402
from qmd_daemon.store.pending_order import EmbedPriority  # noqa: E402
from qmd_daemon.vectorize import BATCH, WINDOW, EmbedHint  # noqa: E402

CORPORA = Path.home() / ".cache" / "qmd-eval" / "corpora"
OLD_ORDER = """SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id
               WHERE c.id NOT IN (SELECT rowid FROM chunk_vectors) ORDER BY c.id"""


def timed(fn: Any, repeat: int = 5) -> tuple[float, float]:
    """Median wall and CPU ms of `repeat` calls (after one warm-up call)."""
    fn()
    wall, cpu = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def batches_until(order: list[int], wanted: set[int]) -> int:
    """Batches embedded, in this order, before every chunk of `wanted` has its vector."""
    last = max(i for i, chunk_id in enumerate(order) if chunk_id in wanted)
    return math.ceil((last + 1) / BATCH)


def edited_file(engine: Engine, name: str, corpus: Path) -> tuple[str, set[int]]:
    """Edit the middle file (by path) of the collection's Python files; its new chunk ids."""
    paths = sorted(p for p in engine.indexed_paths(name) if p.endswith(".py"))
    path = paths[len(paths) // 2]
    target = corpus / path
    target.write_text(target.read_text(encoding="utf-8") + "\n\ndef edited_just_now():\n    return 1\n")
    engine.update([name], progress=False)
    rows = engine.store.conn.execute(
        """SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id JOIN collections o
           ON o.id = f.collection_id WHERE o.name = ? AND f.path = ?""",
        (name, path),
    )
    return path, {int(r[0]) for r in rows}


def edit_to_vectors(corpus: Path, other: Path, work: Path) -> tuple[float, float]:
    """Part 1. Returns one embed batch's median wall and CPU ms (MiniLM, this run)."""
    os.environ["QMD_DAEMON_HOME"] = str(work / "home")
    os.environ.setdefault("QMD_MODELS_DIR", str(ROOT / ".test-cache" / "models"))
    from qmd_daemon.config import IndexConfig

    settings = Settings.from_env()
    settings.config_file.parent.mkdir(parents=True, exist_ok=True)
    config = IndexConfig.load(settings.config_file)
    config.set_models({"profile": "small"})
    config.save()
    engine = Engine(settings)
    try:
        names = []
        for source in (other, corpus):
            copy = work / source.parent.name
            shutil.copytree(source, copy)
            names.append(engine.add_collection(copy, f"{source.parent.name}-copy").name)
            engine.update([names[-1]], progress=False)
        other_name, name = names
        vectors, embedder = engine.vectors, engine.models.embedder()
        assert vectors is not None and embedder is not None, "sqlite-vec and the small profile are needed"
        embedder.embed_query("dimension probe")
        vectors.ensure(embedder.fingerprint, embedder.dim)
        path, wanted = edited_file(engine, name, work / corpus.parent.name)
        total = vectors.pending_count()
        old = [int(r[0]) for r in engine.store.conn.execute(OLD_ORDER)]
        priority = engine.embed_priority(EmbedHint(current=name))
        new = [chunk_id for chunk_id, _c, _h in vectors.pending(None, None, priority)]
        before, after = batches_until(old, wanted), batches_until(new, wanted)
        print(f"edit-to-vectors: {total} chunks pending in {other_name} + {name}; edited {name}/{path} "
              f"({len(wanted)} chunks)")  # fmt: skip
        print(f"  batches of {BATCH} before the edited file has every vector: chunk-id order {before}, "
              f"priority order {after}; ratio {before / after:.0f}x")  # fmt: skip
        started, cpu0 = time.perf_counter(), time.process_time()
        report = engine.embed(None, limit=after * BATCH, hint=lambda: EmbedHint(current=name))
        wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu0
        left = set(chunk_id for chunk_id, _c, _h in vectors.pending(None, None))
        assert not (wanted & left), "the edited file still waits for vectors"
        per_batch = wall_s * 1000 / after, cpu_s * 1000 / after
        old_minutes = before * wall_s / after / 60
        print(f"  real run: {report.embedded} chunks embedded in {wall_s:.1f} s wall / {cpu_s:.1f} s CPU, "
              f"the edited file has its vectors; chunk-id order at this pace ~{old_minutes:.1f} min")
        return per_batch
    finally:
        engine.close()


def pending_cost(home: Path, batch_ms: tuple[float, float]) -> None:
    """Part 2, on a copy of a bench home."""
    from qmd_daemon.store.index_store import IndexStore
    from qmd_daemon.store.vectors import VectorIndex

    store = IndexStore(home / "cache" / "index.sqlite")
    try:
        vectors = VectorIndex(store)
        vectors.ensure("bench-embed-priority-probe", 384)  # nothing embedded: every chunk pending
        conn = store.conn
        files = conn.execute("SELECT collection_id, path FROM files").fetchall()
        rng = random.Random(7)
        returned = {(c, p): rng.randint(1, 40) for c, p in rng.sample(files, min(2000, len(files)))}
        first = files[len(files) // 2][0]
        pending = vectors.pending_count()
        old_sql = OLD_ORDER.replace("SELECT c.id FROM", "SELECT c.id, f.collection_id, c.hash FROM")

        def old_read() -> None:  # what each run did first, under the writer lock (vectorize.py)
            vectors.copy_identical([(int(r[0]), int(r[1]), r[2]) for r in conn.execute(old_sql)])

        def window(priority: EmbedPriority) -> None:  # what each window does now
            vectors.copy_identical(vectors.pending(None, WINDOW, priority))

        rows = [
            ("old: whole pending list + identical-chunk lookups, once a run", old_read),
            ("new: one window + its lookups, no hint", lambda: window(EmbedPriority.now(first))),
            ("new: the same, 2,000 returned files", lambda: window(EmbedPriority.now(first, returned))),
        ]
        print(f"pending read at {pending} pending chunks ({len(files)} files); one embed batch "
              f"{batch_ms[0]:.0f} ms wall / {batch_ms[1]:.0f} ms CPU")  # fmt: skip
        for label, fn in rows:
            wall, cpu = timed(fn, repeat=3)
            print(f"  {label}: {wall:.1f} ms wall, {cpu:.1f} ms CPU; {wall / batch_ms[0]:.3f} of a batch, "
                  f"{wall / (batch_ms[0] * WINDOW / BATCH):.3f} of a window")  # fmt: skip
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPORA / "pydantic" / "pydantic")
    ap.add_argument("--other", type=Path, default=CORPORA / "aiohttp" / "aiohttp")
    ap.add_argument("--scale-home", type=Path, help="a COPY of a bench home (its index gets a probe table)")
    args = ap.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="qmd-embed-priority-") as work:
        batch_ms = edit_to_vectors(args.corpus.resolve(), args.other.resolve(), Path(work))
    if args.scale_home is not None:
        pending_cost(args.scale_home.expanduser(), batch_ms)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
