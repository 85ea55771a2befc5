"""No-change `update` of every collection of a home: wall and CPU seconds (median of --repeat).

    python bench/refresh_cpu.py [--home ~/.cache/qmd-eval/home-edit-scale] [--repeat 3]

CPU time is what a change of code shows on a shared machine, where wall time mostly measures the
wait for a core. For a baseline, run it from outside this checkout against another one,
alternating: `PYTHONPATH=OTHER_CHECKOUT python /path/to/bench/refresh_cpu.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=Path("~/.cache/qmd-eval/home-edit-scale").expanduser())
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ["QMD_DAEMON_HOME"] = str(args.home.expanduser())
    import qmd_daemon
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    engine = Engine(Settings.from_env())
    try:
        engine.update(progress=False)  # settle whatever changed since the last run
        wall, cpu = [], []
        for _ in range(args.repeat):
            c0, t0 = time.process_time(), time.perf_counter()
            engine.update(progress=False)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    finally:
        engine.close()
    print(f"{Path(qmd_daemon.__file__).parent}: no-change update {statistics.median(wall):.2f} s wall, "
          f"{statistics.median(cpu):.2f} s CPU (load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
