"""A search's query embedding while the daemon embeds the index in the background, against the
same query with the model idle, in this process (same model, threads, load).

The background thread embeds batches of 16 code chunks (vectorize.BATCH) without pause; the
foreground embeds one query every `--every` seconds and times it. Prints p50/max of both and
the ratio (busy / idle). Default model: the small profile's MiniLM (.test-cache/models).

    python bench/query_while_embedding.py [--model PATH] [--threads N] [--queries 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.embed import code_texts  # noqa: E402
from qmd_daemon.models.embedder import Embedder  # noqa: E402
from qmd_daemon.models.runtime import default_threads  # noqa: E402
from qmd_daemon.vectorize import BATCH  # noqa: E402

QUESTIONS = ["how is the index searched", "where are tokens parsed", "retry a failed request",
             "which function walks the tree", "store the vector of a chunk"]


def timed_queries(embedder: Embedder, n: int, every: float) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        embedder.embed_query(QUESTIONS[i % len(QUESTIONS)])
        out.append(time.perf_counter() - start)
        time.sleep(every)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=None)
    p.add_argument("--threads", type=int, default=default_threads())
    p.add_argument("--queries", type=int, default=10)
    p.add_argument("--every", type=float, default=0.3, help="seconds between queries")
    args = p.parse_args(argv)
    model = args.model
    if model is None:
        from qmd_daemon.models.profiles import build_small_embed

        model = build_small_embed(ROOT / ".test-cache" / "models")
    embedder = Embedder(model, threads=args.threads)
    embedder.embed_query("load")
    idle = timed_queries(embedder, args.queries, args.every)

    stop = threading.Event()
    texts = code_texts(BATCH * 50)
    embedded = 0

    def background() -> None:
        nonlocal embedded
        for start in range(0, len(texts), BATCH):
            if stop.is_set():
                return
            embedder.embed_documents(texts[start : start + BATCH])
            embedded += BATCH

    worker = threading.Thread(target=background, daemon=True)
    worker.start()
    time.sleep(0.5)
    busy = timed_queries(embedder, args.queries, args.every)
    stop.set()
    worker.join()
    with open("/proc/loadavg", encoding="ascii") as fh:
        load = fh.read().split()[0]
    for name, runs in (("idle", idle), ("while embedding", busy)):
        p50, worst = 1000 * statistics.median(runs), 1000 * max(runs)
        print(f"{name:<16} query p50 {p50:7.1f} ms  max {worst:7.1f} ms")
    print(f"busy / idle p50 = {statistics.median(busy) / statistics.median(idle):.1f} "
          f"({embedded} chunks embedded meanwhile, {args.threads} threads, load {load})")
    embedder.unload()
    return 0


if __name__ == "__main__":
    sys.exit(main())
