"""Process RSS with the small profile's three roles loaded and used once (issue 15: the Gemma file
was mapped twice, once for rerank and once for expand).

    python bench/model_memory.py [--models-dir .test-cache/models]

Prints VmRSS / VmHWM (MB) before loading, after the embedder, after rerank + expand, and whether
rerank and expand share one llama.cpp model.

    python bench/model_memory.py --twin PATH.gguf [PATH.gguf ...]

The cost of the daemon's long embed jobs' second instance (Embedder.twin, daemon/jobs.py) for each
GGUF loaded as an embedder: proportional set size (Pss: a page mapped twice counted once) after one
batch on the instance, then after one on its twin. Run it against another checkout for a baseline:
`PYTHONPATH=OTHER_CHECKOUT python bench/model_memory.py` (from outside this checkout).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def _memory() -> str:
    lines = Path("/proc/self/status").read_text().splitlines()
    fields = {k: v.split()[0] for k, _, v in (line.partition(":") for line in lines) if v.strip()}
    return f"RSS {int(fields['VmRSS']) / 1024:.0f} MB (peak {int(fields['VmHWM']) / 1024:.0f})"


def _pss_mb() -> float:
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no Pss in /proc/self/smaps_rollup")


def twin_cost(path: Path) -> str:
    from qmd_daemon.models.embedder import Embedder

    texts = ["def f(x):\n    return x + 1\n" * 20] * 16  # one batch (vectorize.BATCH)
    embedder = Embedder(path, device="cpu")
    embedder.embed_documents(texts)
    one = _pss_mb()
    twin = embedder.twin()
    twin.embed_documents(texts)
    two = _pss_mb()
    twin.unload()
    embedder.unload()
    return f"{path.name}: Pss {one:.0f} MB with the model, {two:.0f} MB with its twin (+{two - one:.0f} MB)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", type=Path, default=REPO_ROOT / ".test-cache" / "models")
    ap.add_argument("--twin", type=Path, nargs="+", help="GGUF files: each one's Embedder.twin cost")
    args = ap.parse_args()
    if args.twin:
        for path in args.twin:
            print(twin_cost(path))
        return 0
    from qmd_daemon.models.model_set import ModelSet

    print(f"qmd_daemon from {sys.modules['qmd_daemon.models.model_set'].__file__}")
    print(f"bare             {_memory()}")
    models = ModelSet({"profile": "small", "device": "cpu"}, args.models_dir)
    embedder = models.embedder()
    assert embedder is not None, "the small profile is not built: run pytest tests/models once"
    embedder.embed_query("warm up")
    print(f"+ embed          {_memory()}")
    reranker, expander = models.reranker(), models.expander()
    assert reranker is not None and expander is not None
    reranker.score("read the config file", ["def load_config(path): ...", "class Server: ..."])
    expander.expand("read the config file")
    print(f"+ rerank, expand {_memory()}")
    print(f"rerank and expand share one model: {reranker.handle is expander.handle}")
    models.unload()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
