"""The llama.cpp runtime on a GPU against the same code on the CPU, in one run.

For a machine whose llama-cpp-python is built with GPU offload (CUDA, Metal, Vulkan). Prints:
- whether llama.cpp can offload, and what `select_device()` picks;
- embedder agreement and speed, GPU / CPU, for `--embed-model` (a BERT-style GGUF, mean pooling)
  and a random-weight Qwen3 with last-token pooling (the Qwen3-Embedding code path), at one and
  at several sequences per decode;
- reranker agreement, GPU / CPU, for random-weight Qwen3 rerankers with a rank head and without
  (the two scoring paths of Qwen3-Reranker);
- `bench --auto` with those models, GPU first then CPU (`--auto`).

    python bench/device_check.py --embed-model PATH [--texts 256] [--auto] [--json OUT]

Random weights make scores meaningless but shapes, ranges and CPU/GPU agreement checkable; the
real Qwen3 files cannot be fetched where this runs. Agreement is cosine (embeddings) and |delta|
(P(yes)); llama.cpp's GPU kernels differ in rounding, so near 1 / near 0 is the expectation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "models"))

from qmd_daemon.models.embedder import Embedder  # noqa: E402
from qmd_daemon.models.reranker import Reranker  # noqa: E402
from qmd_daemon.models.runtime import gpu_available, select_device  # noqa: E402


def sample_texts(n: int) -> list[str]:
    """40-line windows of this repository's own Python source: real code of varied length."""
    texts: list[str] = []
    for path in sorted((ROOT / "qmd_daemon").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for start in range(0, len(lines), 40):
            texts.append(f"{path.relative_to(ROOT)}\n" + "\n".join(lines[start:start + 40]))
            if len(texts) >= n:
                return texts
    return texts


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb) if na and nb else 0.0


def embed_run(path: Path, device: str, texts: list[str], seqs: int) -> tuple[list[list[float]], float]:
    emb = Embedder(path, device=device, seqs_per_decode=seqs)
    emb.embed_documents(texts[:4])  # load and warm
    t0 = time.perf_counter()
    vectors = emb.embed_documents(texts)
    seconds = time.perf_counter() - t0
    emb.unload()
    return vectors, len(texts) / seconds


def compare_embedder(name: str, path: Path, texts: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {"model": name}
    cpu_vecs, row["cpu_chunks_per_s"] = embed_run(path, "cpu", texts, 1)
    for seqs in (1, 16):
        gpu_vecs, cps = embed_run(path, "gpu", texts, seqs)
        row[f"gpu_chunks_per_s_seqs{seqs}"] = round(cps, 1)
        row[f"gpu_over_cpu_seqs{seqs}"] = round(cps / row["cpu_chunks_per_s"], 2)
        row[f"min_cosine_seqs{seqs}"] = round(min(cosine(a, b) for a, b in zip(cpu_vecs, gpu_vecs,
                                                                                strict=True)), 5)
    row["cpu_chunks_per_s"] = round(row["cpu_chunks_per_s"], 1)
    return row


def compare_reranker(name: str, path: Path, texts: list[str]) -> dict[str, Any]:
    query = "where is the daemon token compared"
    docs = texts[:40]
    out: dict[str, Any] = {"model": name}
    scores: dict[str, list[float]] = {}
    for device in ("cpu", "gpu"):
        rr = Reranker(path, device=device, max_doc_tokens=256)
        rr.score(query, docs[:2])
        t0 = time.perf_counter()
        scores[device] = rr.score(query, docs)
        out[f"{device}_pairs_per_s"] = round(len(docs) / (time.perf_counter() - t0), 1)
        out["mode"] = rr.mode
        rr.unload()
    deltas = [abs(a - b) for a, b in zip(scores["cpu"], scores["gpu"], strict=True)]
    out["max_abs_delta"] = round(max(deltas), 5)
    out["in_unit_range"] = all(0.0 <= s <= 1.0 for s in scores["cpu"] + scores["gpu"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embed-model", type=Path, required=True, help="a BERT-style embedding GGUF")
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--auto", action="store_true", help="also run bench --auto, GPU then CPU")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    report: dict[str, Any] = {"gpu_offload": gpu_available(), "select_device_auto": select_device("auto")}
    print(json.dumps(report), flush=True)
    texts = sample_texts(args.texts)
    from tiny_qwen3 import write_tiny_qwen3  # numpy: only after llama.cpp is loaded (gguf_info.import_gguf)

    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        qwen_embed = write_tiny_qwen3(tmpdir / "qwen3-embed.gguf", pooling_last=True)
        qwen_head = write_tiny_qwen3(tmpdir / "qwen3-rerank-head.gguf", rank_head=True)
        qwen_lm = write_tiny_qwen3(tmpdir / "qwen3-lm.gguf")
        report["embed"] = [compare_embedder(args.embed_model.name, args.embed_model, texts),
                           compare_embedder("tiny-qwen3-last-pooling", qwen_embed, texts)]
        for row in report["embed"]:
            print(json.dumps(row), flush=True)
        report["rerank"] = [compare_reranker("tiny-qwen3-rank-head", qwen_head, texts),
                            compare_reranker("tiny-qwen3-logits", qwen_lm, texts)]
        for row in report["rerank"]:
            print(json.dumps(row), flush=True)
        if args.auto:
            from qmd_daemon.setup.bench import auto

            os.environ.update(QMD_EMBED_MODEL=str(args.embed_model), QMD_RERANK_MODEL=str(qwen_head),
                              QMD_EXPAND_MODEL=str(qwen_lm))
            report["auto"] = auto("small", echo=lambda s: print(s, flush=True))
            print(json.dumps(report["auto"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
