"""The embed job's abort flag on this machine's device: does a GPU decode consult it, how soon a
batch stops, and whether the instance is sound afterwards.

    python bench/device/abort_check.py --model MiniLM.gguf [--texts 256] [--json OUT]

Why: the daemon's embed job gives way to a query by setting the flag (qmd_daemon/models/abort.py),
which llama.cpp's CPU backend polls per graph node; whether a decode offloaded whole to a GPU polls
it too shows only on a GPU (an H200, 2026-12-04: it did, a batch stopped within 1.6 ms).
bench/embed_abort.py measures the same on the CPU with Gemma; this runs on select_device("auto").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from qmd_daemon.models.runtime import load_llama_first  # noqa: E402

load_llama_first()  # before numpy comes in: a CUDA build crashed otherwise (models.runtime.llama_module)

from bench.embed_abort import LONG, stop_after  # noqa: E402
from qmd_daemon.models.abort import Aborted, AbortFlag  # noqa: E402
from qmd_daemon.models.embedder import Embedder  # noqa: E402
from qmd_daemon.models.runtime import select_device  # noqa: E402


def flag_before_decode(twin: Embedder, flag: AbortFlag) -> str:
    """One decode with the flag already set: aborted only if llama_decode itself consulted it (the
    Python-side check between decodes is skipped by calling the decode directly)."""
    with twin.handle.acquire() as llm:
        tokens = [twin.framed_tokens(llm, LONG)]
        flag.set()
        try:
            twin._decode(llm, tokens)
            return "completed: llama_decode did not consult the flag"
        except Aborted:
            return "aborted (llama_decode returned 2)"
        finally:
            flag.clear()


def stop_during(twin: Embedder, flag: AbortFlag, texts: list[str], after_s: float) -> dict[str, Any]:
    """Embed `texts` with the flag set from another thread after `after_s`: what was kept, and the
    milliseconds from the flag to the return."""
    flag.clear()
    thread, when = stop_after(flag, after_s)
    try:
        twin.embed_documents(texts)
        return {"outcome": "finished before the flag"}
    except Aborted as exc:
        returned = time.perf_counter()
        thread.join()
        return {"outcome": f"aborted after {len(exc.done)} of {len(texts)} texts",
                "stop_latency_ms": round(max(0.0, returned - when[0]) * 1000, 3)}
    finally:
        thread.join()
        flag.clear()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, required=True, help="an embedding GGUF (MiniLM)")
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    device = select_device("auto")
    plain = Embedder(args.model, device=device)
    flag = AbortFlag()
    twin = plain.twin(flag)
    texts = [f"{LONG}\n# {i}" for i in range(args.texts)]
    reference = plain.embed_documents(texts)
    report: dict[str, Any] = {"device": device, "decode_with_flag_set": flag_before_decode(twin, flag)}
    t0 = time.perf_counter()
    report["twin_equals_plain"] = twin.embed_documents(texts) == reference
    report["batch_s"] = batch_s = round(time.perf_counter() - t0, 4)
    for fraction in (0.1, 0.5):
        report[f"flag_at_{fraction:.0%}_of_batch"] = stop_during(twin, flag, texts, batch_s * fraction)
    report["after_stops_equal_clean"] = twin.embed_documents(texts[:32]) == reference[:32]
    twin.unload()
    plain.unload()
    print(json.dumps(report), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    sound = report["twin_equals_plain"] and report["after_stops_equal_clean"]
    return 0 if sound and report["decode_with_flag_set"].startswith("aborted") else 1


if __name__ == "__main__":
    sys.exit(main())
