"""Process RSS with the small profile's three roles loaded and used once (issue 15: the Gemma file
was mapped twice, once for rerank and once for expand).

    python bench/model_memory.py [--models-dir .test-cache/models]

Prints VmRSS / VmHWM (MB) before loading, after the embedder, after rerank + expand, and whether
rerank and expand share one llama.cpp model. Run it against another checkout for a baseline:
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models-dir", type=Path, default=REPO_ROOT / ".test-cache" / "models")
    args = ap.parse_args()
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
