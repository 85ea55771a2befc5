"""Stopping a decode mid-graph with the GIL-free abort flag (qmd_daemon/models/abort.py), measured.

    python bench/embed_abort.py [--rounds 3] [--texts 120]

1. Latency: Gemma 3 270M loaded as an embedder (a decoder; one 512-token decode takes seconds on
   2 cores) embeds a long text on a thread; the flag is set from this thread at a fraction of the
   decode's full time; the seconds from the flag to the decode's return, and the same text's vector
   afterwards compared with a clean instance's (bit for bit).
2. The GIL: while this thread holds the GIL for 1.5 s (a C call through ctypes.PyDLL keeps it), the
   process's CPU seconds, with the flag attached (libc's strlen as the callback) and with a Python
   callback instead: the decode computes through the hold only when no callback needs the GIL.
3. Cost: MiniLM documents per second on an instance with the flag attached and on one without,
   interleaved --rounds times (the callback runs once per graph node of every decode).
"""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qmd_daemon.models.abort import Aborted, AbortFlag  # noqa: E402
from qmd_daemon.models.embedder import Embedder  # noqa: E402
from qmd_daemon.models.profiles import build_small_profile  # noqa: E402
from qmd_daemon.models.runtime import llama_module  # noqa: E402

MODELS = ROOT / ".test-cache" / "models"
LONG = "def parse_datetime(value):\n    return value.split('T')\n" * 60


def stop_after(flag: AbortFlag, seconds: float) -> tuple[threading.Thread, list[float]]:
    """Set `flag` from another thread after `seconds` (started here); the list gets the moment."""
    when: list[float] = []

    def later() -> None:
        time.sleep(seconds)
        flag.set()
        when.append(time.perf_counter())

    thread = threading.Thread(target=later)
    thread.start()
    return thread, when


def latency(path: Path) -> None:
    plain = Embedder(path, threads=2)
    flag = AbortFlag()
    twin = plain.twin(flag)
    reference = plain.embed_documents([LONG])
    started = time.perf_counter()
    twin.embed_documents([LONG])
    full = time.perf_counter() - started
    print(f"1. {path.name}: one 512-token decode {full:.2f} s")
    for fraction in (0.1, 0.3, 0.5, 0.7, 0.9):
        flag.clear()
        started = time.perf_counter()
        thread, when = stop_after(flag, full * fraction)
        try:
            twin.embed_documents([LONG])
            stopped = False
        except Aborted:
            stopped = True
        returned = time.perf_counter()
        thread.join()
        outcome = (f"stopped {returned - when[0]:.3f} s after the flag" if stopped
                   else "finished before the flag (this decode ran faster than the first)")
        print(f"   flag at {fraction:.0%} of the decode: {outcome} ({returned - started:.2f} s in all)")
    flag.clear()
    same = twin.embed_documents([LONG]) == reference
    print(f"   after the stops: the same vector as a clean instance's, bit for bit: {same}")
    twin.unload()
    plain.unload()


def gil(path: Path) -> None:
    llama_cpp = llama_module()
    for mode in ("strlen (the flag)", "a Python callback"):
        embedder = Embedder(path, threads=2, abort=AbortFlag())
        embedder.embed_documents(["load"])
        if mode.startswith("a Python"):
            keep = llama_cpp.ggml_abort_callback(lambda _data: False)
            with embedder.handle.acquire() as llm:
                llama_cpp.llama_set_abort_callback(llm.ctx, keep, None)
        thread = threading.Thread(target=embedder.embed_documents, args=([LONG],))
        thread.start()
        time.sleep(0.3)
        before = os.times()
        ctypes.PyDLL(None).usleep(1_500_000)  # this thread keeps the GIL through the call
        after = os.times()
        thread.join()
        cpu = after.user - before.user + after.system - before.system
        print(f"2. {mode}: {cpu:.2f} CPU seconds computed while this thread held the GIL 1.5 s")
        embedder.unload()


def cost(path: Path, rounds: int, count: int) -> None:
    texts = [f"def function_{i}(value):\n    return value * {i}\n" * 12 for i in range(count)]
    rates: dict[str, list[float]] = {"attached": [], "none": []}
    plain = Embedder(path, threads=2)
    with_flag = plain.twin(AbortFlag())
    for embedder in (plain, with_flag):
        embedder.embed_documents(texts[:4])
    for _ in range(rounds):
        for name, embedder in (("none", plain), ("attached", with_flag)):
            started = time.perf_counter()
            embedder.embed_documents(texts)
            rates[name].append(count / (time.perf_counter() - started))
    for name, values in rates.items():
        print(f"3. {path.name}, flag {name}: {' '.join(f'{v:.1f}' for v in values)} docs/s "
              f"(median {statistics.median(values):.1f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--texts", type=int, default=120)
    args = ap.parse_args()
    logging.disable(logging.ERROR)  # llama.cpp's three lines per stopped decode
    models = build_small_profile(MODELS)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    latency(models["expand"])
    gil(models["expand"])
    cost(models["embed"], args.rounds, args.texts)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
