"""The first searches with the index out of the page cache: wall and CPU ms, and MB read, each.

    python bench/first_search.py --home ~/.cache/qmd-eval/home-first-touch [--count 4] [--daemon]

Before each kind of query (the dev questions, then the dev bug reports) the index file and its
-wal are dropped from the page cache (posix_fadvise DONTNEED; the home must not be in use), and
a fresh process opens the index and runs the first --count queries of that kind, lexical, over
all collections: what the first searches after a start pay when other work has pushed the index
out of memory. MB read is the process's read_bytes (/proc/self/io): pages SQLite read, with the
kernel's readahead around them. With --daemon the index is dropped once, a daemon starts in this
process (no watcher, no embedding) and the same queries go to its /search as soon as it listens,
each with the seconds since the start, and when its start-up check of the index finished.
For a baseline run it from outside this checkout against another one, alternating:
`cd /tmp && PYTHONPATH=OTHER_CHECKOUT python /path/to/bench/first_search.py ...`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

EVAL_DIR = Path(os.environ.get("QMD_EVAL_DIR", "/work/shared/eval"))
KINDS = {"questions": "dev-queries.jsonl", "bug_reports": "dev-issues.jsonl"}


def drop_from_page_cache(home: Path) -> None:
    """The index file and its -wal/-shm leave the page cache (clean pages only: nothing writes)."""
    for suffix in ("", "-wal", "-shm"):
        path = home / "cache" / f"index.sqlite{suffix}"
        if path.exists():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def bytes_read() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    return 0


def queries(kind: str, count: int) -> list[str]:
    with (EVAL_DIR / KINDS[kind]).open(encoding="utf-8") as rows:
        return [json.loads(line)["query"] for line, _ in zip(rows, range(count), strict=False)]


def in_process(kind: str, count: int) -> list[dict[str, float]]:
    """Open the index and run the queries: each one's wall and CPU ms and MB read."""
    from qmd_daemon.engine import Engine
    from qmd_daemon.search.pipeline import SearchOptions
    from qmd_daemon.settings import Settings

    options = SearchOptions(vectors=False, expand=False, rerank=False)
    engine = Engine(Settings.from_env())
    rows = []
    try:
        for query in queries(kind, count):
            r0, c0, t0 = bytes_read(), time.process_time(), time.perf_counter()
            engine.search(query, None, limit=10, options=options)
            rows.append({
                "wall_ms": (time.perf_counter() - t0) * 1000,
                "cpu_ms": (time.process_time() - c0) * 1000,
                "read_mb": (bytes_read() - r0) / 1e6,
            })
    finally:
        engine.close()
    return rows


async def through_daemon(count: int) -> list[dict[str, Any]]:
    """A daemon started on the cold index; the queries sent as soon as it listens."""
    import aiohttp

    from qmd_daemon.daemon.server import Daemon
    from qmd_daemon.settings import Settings

    started = time.perf_counter()
    daemon = Daemon(Settings.from_env(), watch=False, auto_embed=False, write_state_file=False)
    await daemon.start()
    headers = {"Authorization": f"Bearer {daemon.token}"}
    rows: list[dict[str, Any]] = [{"listening_s": time.perf_counter() - started}]
    try:
        async with aiohttp.ClientSession() as session:
            for kind in KINDS:
                for query in queries(kind, count):
                    t0 = time.perf_counter()
                    body = {"query": query, "limit": 10, "vectors": False, "expand": False, "rerank": False}
                    async with session.post(
                        f"http://127.0.0.1:{daemon.port}/search", json=body, headers=headers
                    ) as resp:
                        if resp.status != 200:
                            raise SystemExit(f"search: HTTP {resp.status}: {await resp.text()}")
                        await resp.read()
                    wall_ms = (time.perf_counter() - t0) * 1000
                    rows.append({"kind": kind, "at_s": t0 - started, "wall_ms": wall_ms})
            check = daemon._index_check
            while check is not None and not check.done():
                await asyncio.sleep(0.05)
            rows.append({"index_check_done_s": time.perf_counter() - started})
    finally:
        await daemon.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, required=True)
    ap.add_argument("--count", type=int, default=4, help="queries of each kind")
    ap.add_argument("--daemon", action="store_true", help="through a daemon started on the cold index")
    ap.add_argument("--child", choices=sorted(KINDS), help=argparse.SUPPRESS)
    args = ap.parse_args()
    home = args.home.expanduser()
    os.environ["QMD_DAEMON_HOME"] = str(home)
    if args.child:
        print(json.dumps(in_process(args.child, args.count)))
        return 0
    import qmd_daemon

    print(f"{Path(qmd_daemon.__file__).parent}, load average {os.getloadavg()[0]:.1f}")
    if args.daemon:
        drop_from_page_cache(home)
        for row in asyncio.run(through_daemon(args.count)):
            print("  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))
        return 0
    for kind in KINDS:
        drop_from_page_cache(home)
        child = [sys.executable, __file__, "--home", str(home), "--count", str(args.count), "--child", kind]
        done = subprocess.run(child, check=True, capture_output=True, text=True)
        for n, row in enumerate(json.loads(done.stdout.splitlines()[-1])):
            print(f"{kind:12} {n}  wall {row['wall_ms']:7.1f} ms  cpu {row['cpu_ms']:6.1f} ms  "
                  f"read {row['read_mb']:5.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
