"""Embedding throughput: qmd's Embedder document path against raw llama-cpp-python, same model.

Prints chunks/s for both and the ratio (target >= 0.9). Both run in this process with the same
GGUF, context size and thread count, interleaved in blocks of 10 texts so load from other processes
hits both alike. Default model: the `small` profile's MiniLM (built under .test-cache/models if needed).

    python bench/embed.py [--model PATH] [--threads N] [--n 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from qmd_daemon.models.embedder import Embedder  # noqa: E402
from qmd_daemon.models.runtime import default_threads, llama_module  # noqa: E402

_WORDS = [
    "def", "class", "return", "self", "import", "value", "config", "parse", "token", "index", "search",
    "query", "result", "path", "file", "data", "list", "dict", "async", "await", "raise", "error", "node",
    "tree", "walk", "update", "store", "chunk", "embed", "vector",
]


def code_texts(n: int, lines: int = 18, seed: int = 7) -> list[str]:
    """~250-token code-like chunks (MiniLM WordPiece), deterministic."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        body = []
        for _ in range(lines):
            a, b, c = rng.sample(_WORDS, 3)
            body.append(f"    {a}_{b} = {c}({a}.{b}, {rng.randint(0, 99)})")
        out.append(f"def {rng.choice(_WORDS)}_{i}(self, {rng.choice(_WORDS)}):\n" + "\n".join(body))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, help="GGUF embedding model (default: small profile MiniLM)")
    ap.add_argument("--threads", type=int, default=default_threads())
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    model = args.model
    if model is None:
        from qmd_daemon.models.profiles import build_small_embed

        model = build_small_embed(ROOT / ".test-cache" / "models")
    texts = code_texts(args.n)
    emb = Embedder(model, threads=args.threads)
    n_ctx = emb.handle.n_ctx
    raw = llama_module().Llama(model_path=str(model), embedding=True, n_ctx=n_ctx, n_batch=n_ctx,
                               n_ubatch=n_ctx, n_threads=args.threads, n_threads_batch=args.threads,
                               verbose=False)
    with emb.handle.acquire() as llm:
        n_tok = sum(len(llm.tokenize(t.encode())) for t in texts) / len(texts)
    emb.embed_documents(texts[:2])
    raw.embed(texts[0])
    t_qmd = t_raw = 0.0
    # Interleave in blocks of 10 texts, alternating which goes first, so that load from other
    # processes (this box is shared) drifts over both paths alike.
    blocks = [texts[i : i + 10] for i in range(0, len(texts), 10)]
    for rnd in range(args.rounds):
        for b, block in enumerate(blocks):
            for which in ("qmd", "raw") if (rnd + b) % 2 == 0 else ("raw", "qmd"):
                t0 = time.perf_counter()
                if which == "qmd":
                    emb.embed_documents(block)
                    t_qmd += time.perf_counter() - t0
                else:
                    for t in block:
                        raw.embed(t, normalize=True)
                    t_raw += time.perf_counter() - t0
    total = len(texts) * args.rounds
    q, r = total / t_qmd, total / t_raw
    print(f"model {model.name}  threads {args.threads}  texts {len(texts)} x {args.rounds} rounds  "
          f"~{n_tok:.0f} tokens each")
    print(f"qmd Embedder.embed_documents : {q:7.2f} chunks/s")
    print(f"raw llama_cpp Llama.embed    : {r:7.2f} chunks/s (one text per call)")
    print(f"ratio qmd/raw                : {q / r:7.3f}  (target >= 0.9)")


if __name__ == "__main__":
    main()
