"""No-change `update` of every collection of a home: wall and CPU seconds (median of --repeat).

    python bench/refresh_cpu.py [--home ~/.cache/qmd-eval/home-edit-scale] [--repeat 3] [--daemon]

CPU time is what a change of code shows on a shared machine, where wall time mostly measures the
wait for a core. For a baseline, run it from outside this checkout against another one,
alternating: `PYTHONPATH=OTHER_CHECKOUT python /path/to/bench/refresh_cpu.py`.

`--daemon` times the same refresh through a daemon's `/refresh` (no target: every collection),
without a watcher and then with one (the refresh then skips what the watcher vouches for,
daemon/vouch.py), in this one run, and prints their ratio. The home must not be served by a daemon
meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any


def timed(fn: Any, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of `repeat` calls of `fn`."""
    wall, cpu = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def in_process(repeat: int) -> str:
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    engine = Engine(Settings.from_env())
    try:
        engine.update(progress=False)  # settle whatever changed since the last run
        wall, cpu = timed(lambda: engine.update(progress=False), repeat)
    finally:
        engine.close()
    return f"no-change update {wall:.2f} s wall, {cpu:.2f} s CPU"


async def through_daemon(watch: bool, repeat: int) -> tuple[float, float, int]:
    """Median wall and CPU seconds of a no-change `/refresh` of every collection, and how many
    collections the last one skipped as vouched for."""
    import aiohttp

    from qmd_daemon.daemon.server import Daemon
    from qmd_daemon.settings import Settings

    daemon = Daemon(Settings.from_env(), watch=watch, auto_embed=False, write_state_file=False)
    await daemon.start()  # the watch is made here, before the first refresh
    headers = {"Authorization": f"Bearer {daemon.token}"}
    vouched: list[str] = []

    async def refresh(session: aiohttp.ClientSession) -> None:
        async with session.post(
            f"http://127.0.0.1:{daemon.port}/refresh", json={"wait": 600}, headers=headers
        ) as resp:
            (job,) = (await resp.json())["jobs"]
            if job["state"] != "done":
                raise SystemExit(f"refresh {job['state']}: {job['error']}")
            vouched[:] = job["result"]["vouched"]

    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(2):  # settle; the first refresh under the watch is the one later ones skip after
                await refresh(session)
            wall, cpu = [], []
            for _ in range(repeat):
                c0, t0 = time.process_time(), time.perf_counter()
                await refresh(session)
                wall.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
    finally:
        await daemon.close()
    return statistics.median(wall), statistics.median(cpu), len(vouched)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=Path("~/.cache/qmd-eval/home-edit-scale").expanduser())
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--daemon", action="store_true", help="through a daemon, unwatched vs watched")
    args = ap.parse_args()
    os.environ["QMD_DAEMON_HOME"] = str(args.home.expanduser())
    import qmd_daemon

    where = Path(qmd_daemon.__file__).parent
    if not args.daemon:
        print(f"{where}: {in_process(args.repeat)} (load average {os.getloadavg()[0]:.1f})")
        return 0
    from qmd_daemon.config import IndexConfig
    from qmd_daemon.settings import Settings

    count = len(IndexConfig.load(Settings.from_env().config_file).collections())
    rows = {watch: asyncio.run(through_daemon(watch, args.repeat)) for watch in (False, True)}
    (w0, c0, _), (w1, c1, skipped) = rows[False], rows[True]
    print(f"{where}: no-change /refresh of {count} collections through the daemon, median of {args.repeat}")
    print(f"  no watcher:   {w0:.3f} s wall, {c0:.3f} s CPU")
    print(f"  watched:      {w1:.3f} s wall, {c1:.3f} s CPU ({skipped} of {count} skipped as vouched for)")
    load = os.getloadavg()[0]
    print(f"  watched / no watcher: wall x{w1 / w0:.3f}, CPU x{c1 / c0:.3f} (load average {load:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
