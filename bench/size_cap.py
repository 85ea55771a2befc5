"""What the size caps cost the daemon's reader thread when an ai-search lands in a tree too big to
register: the old check (the whole tree listed by `scan`), the new one (`tally_to_cap`: listed
until the file cap is passed) and a repeated ask (the remembered refusal), on a generated tree of
small files in folders of 100, without git (the scan walks it). Medians of `--rounds`.

    python bench/size_cap.py [--files 150000] [--cap 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from qmd_daemon.errors import UsageError  # noqa: E402
from qmd_daemon.ingest.root_policy import check_size, tally_to_cap  # noqa: E402
from qmd_daemon.ingest.scan import scan  # noqa: E402
from qmd_daemon.settings import DEFAULT_MASK, Settings  # noqa: E402


def generate_small_files(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"d{i // 100}"
        if i % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"f{i}.py").write_bytes(b"X = 1\n")


def _median_s(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _refused(root: Path, settings: Settings) -> None:
    try:
        check_size(root, settings, mask=DEFAULT_MASK, ignore=[])
    except UsageError:
        return
    raise SystemExit("the tree fits the cap: raise --files or lower --cap")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=150_000)
    parser.add_argument("--cap", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    settings = replace(Settings.from_env(), max_collection_files=args.cap, max_collection_mb=0)
    with tempfile.TemporaryDirectory(prefix="qmd-size-cap-bench-") as tmp:
        root = Path(tmp, "tree").resolve()
        generate_small_files(root, args.files)
        full = _median_s(lambda: scan(root, mask=DEFAULT_MASK, ignore=[], excludes=settings.excludes,
                                      max_file_bytes=settings.max_file_bytes), args.rounds)  # fmt: skip
        capped = _median_s(lambda: tally_to_cap(root, settings, mask=DEFAULT_MASK, ignore=[]), args.rounds)
        _refused(root, settings)  # the first refusal, remembered
        again = _median_s(lambda: _refused(root, settings), args.rounds)
    print(f"files {args.files:,}, cap {args.cap:,}, rounds {args.rounds} (medians)")
    print(f"whole tree listed (old)     {full * 1000:9.1f} ms")
    print(f"listed until the cap (new)  {capped * 1000:9.1f} ms   ratio {capped / full:.3f}x")
    print(f"asked again (remembered)    {again * 1000:9.3f} ms   ratio {again / full:.5f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
