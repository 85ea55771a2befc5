"""The path regex of query.condense() before and after issue 12, and the whole query analysis, on
input an agent pastes (a long word run, hex, base64), in one run: the old pattern grows with the
square of the input, the new one linearly.

    python bench/query_regex.py [--sizes 2000,5000,10000]
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

OLD_PATH = re.compile(r"[\w.-]*[/\\][\w./\\-]+\.\w{1,5}")  # the baseline: before issue 12


def _seconds(fn, text: str) -> float:
    started = time.perf_counter()
    fn(text)
    return time.perf_counter() - started


def main() -> int:
    from qmd_daemon.search.query import _PATH, parse_query

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,5000,10000")
    sizes = [int(s) for s in ap.parse_args().sizes.split(",")]
    header = ('input', 'chars', 'old _PATH s', 'new _PATH s', 'old/new', 'parse_query s')
    print(f"{header[0]:<10}{header[1]:>8}{header[2]:>13}{header[3]:>13}{header[4]:>10}{header[5]:>15}")
    for n in sizes:
        inputs = {
            "a-run": "a" * n,
            "hex": os.urandom(n // 2).hex(),
            "base64": base64.b64encode(os.urandom(n * 3 // 4)).decode()[:n],
        }
        for name, text in inputs.items():
            old = _seconds(OLD_PATH.findall, text)
            new = _seconds(_PATH.findall, text)
            whole = _seconds(parse_query, text)
            print(f"{name:<10}{n:>8}{old:>13.4f}{new:>13.6f}{old / max(new, 1e-9):>10.0f}{whole:>15.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
