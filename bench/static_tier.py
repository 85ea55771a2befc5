"""Static vector tier (issue 15): distil the profile's embedder into a token table, embed every
chunk of the dev corpora with it, and compare lexical with hybrid-with-static in one run.

    nice -n 10 python bench/static_tier.py --set queries --home ~/.cache/qmd-eval/home-static-root \
        [--profile small] [--dims 256] [--variants raw,parts] [--deep] [--table FILE]

Prints: the distillation (tokens, seconds), per variant the chunks embedded a second, then per
set and query category NDCG@10 of `lexical`, `hybrid-static-<variant>` (the engine's pipeline with the static
vectors as its vector list), `static-<variant>` (vectors alone), and with --deep the home's own
deep vectors (`hybrid`, when the home holds them), each with its delta over lexical.

Variants: `raw` embeds what the deep model sees (path, heading, signature, text); `parts` appends
the parts of compound identifiers (`resolveRedirects` -> resolve redirects), as FTS gets them.
The static vectors stay in memory (`MemoryVectors`, the shape of store.vectors.VectorIndex);
the home's index is only updated, never given these vectors.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import retrieval  # noqa: E402
from bench.metrics import aggregate  # noqa: E402
from bench.static_embedder import (  # noqa: E402
    STATIC_DIMS,
    StaticEmbedder,
    embed_vocabulary,
    principal_components,
    zipf_weights,
)
from qmd_daemon.text.chunk_model import embedding_text  # noqa: E402
from qmd_daemon.text.identifiers import identifier_parts_text  # noqa: E402

EMBED_BATCH = 256
ANALYSERS = {
    "raw": None,
    "parts": lambda text: f"{text}\n{identifier_parts_text(text)}",
}
WEIGHTINGS = ("zipf", "idf", "none")


class MemoryVectors:
    """Chunk vectors in a numpy matrix, searched exactly; the calls the pipeline makes of a
    VectorIndex (active_model, search, pending_count)."""

    def __init__(self, fingerprint: str, ids: Any, collections: Any, matrix: Any) -> None:
        self.fingerprint, self.ids, self.collections, self.matrix = fingerprint, ids, collections, matrix

    def active_model(self) -> tuple[str, int, str]:
        return self.fingerprint, int(self.matrix.shape[1]), "float"

    def search(self, vector: list[float], collection_ids: list[int], k: int) -> list[tuple[int, float]]:
        from qmd_daemon.numeric import np

        mask = np.isin(self.collections, collection_ids)
        sims = self.matrix[mask] @ np.asarray(vector, dtype=np.float32)
        ids = self.ids[mask]
        top = np.argsort(-sims)[:k]
        return [(int(ids[i]), float(sims[i])) for i in top]

    def pending_count(self, collection_ids: list[int] | None = None) -> int:
        return 0


def chunk_texts(engine: Any, collection_ids: list[int]) -> tuple[list[int], list[int], list[str]]:
    """Every chunk of the collections with the text the embedding pass gives a model."""
    marks = ",".join("?" * len(collection_ids))
    pairs = engine.store.conn.execute(
        f"SELECT c.id, f.collection_id FROM chunks c JOIN files f ON f.id = c.file_id "
        f"WHERE f.collection_id IN ({marks}) ORDER BY c.id", collection_ids).fetchall()
    ids = [int(p[0]) for p in pairs]
    rows = engine.store.chunks_by_ids(ids)
    texts = [embedding_text(rows[i].path, rows[i].heading, rows[i].signature, rows[i].text) for i in ids]
    return ids, [int(p[1]) for p in pairs], texts


def embed_static(static: StaticEmbedder, ids: list[int], collections: list[int],
                 texts: list[str]) -> tuple[MemoryVectors, float]:
    """The chunks' static vectors and the chunks embedded a second."""
    from qmd_daemon.numeric import np

    start = time.perf_counter()
    vectors: list[list[float]] = []
    for i in range(0, len(texts), EMBED_BATCH):
        vectors.extend(static.embed_documents(texts[i : i + EMBED_BATCH]))
    rate = len(texts) / max(1e-9, time.perf_counter() - start)
    matrix = np.asarray(vectors, dtype=np.float32)
    return MemoryVectors(static.fingerprint, np.asarray(ids), np.asarray(collections), matrix), rate


def token_weights(weighting: str, static: StaticEmbedder, texts: list[str], n_tokens: int) -> Any:
    """Per-token weights: model2vec's Zipf-rank SIF, IDF over these chunks, or none."""
    from qmd_daemon.numeric import np

    if weighting == "zipf":
        return zipf_weights(n_tokens)
    if weighting == "none":
        return np.ones(n_tokens, dtype=np.float32)
    df = np.zeros(n_tokens, dtype=np.float64)
    for tokens in static.token_ids(texts):
        df[np.unique(np.asarray(tokens, dtype=np.int64))] += 1
    return np.log((len(texts) + 1) / (df + 1)).astype(np.float32)


def static_method(ctx: retrieval.Context, vectors: MemoryVectors, static: StaticEmbedder,
                  lexical: bool, vector_weight: float | None = None) -> retrieval.MethodFn:
    """The engine's pipeline with the static vectors as its vector list (lexical=False: alone);
    vector_weight None: the engine's default."""
    from qmd_daemon.search.pipeline import SearchModels, SearchOptions, run_search

    models = SearchModels(vectors=vectors, embedder=static)
    weight = SearchOptions().vector_weight if vector_weight is None else vector_weight

    def run(query: str, collection: str) -> list[str]:
        options = SearchOptions(limit=retrieval.SEARCH_LIMIT, max_tokens=None, lexical=lexical,
                                boosts=lexical, vector_weight=weight)
        ids = ctx.engine.collection_ids([collection])
        return [h.path for h in run_search(ctx.engine.store, query, ids, options, models)]

    return run


def format_groups(by_method: dict[str, list[dict]]) -> str:
    """One row per group (all, each query category, each language), one column per method: NDCG@10
    and its delta over lexical; then p50 latency."""
    groups = {name: retrieval.group_rows(rs) for name, rs in by_method.items()}
    shown = ["ALL"] + sorted(g for g in groups["lexical"] if g.startswith(("cat:", "lang:")))
    width = max(18, *(len(name) + 2 for name in by_method))
    lines = [f"{'group':<20}{'n':>4}" + "".join(f"{name:>{width}}" for name in by_method)]
    for g in shown:
        cells = []
        for name in by_method:
            value, base = (aggregate(groups[m][g])["ndcg@10"] for m in (name, "lexical"))
            cells.append(f"{f'{value:.3f} ({value - base:+.3f})':>{width}}")
        lines.append(f"{g:<20}{len(groups['lexical'][g]):>4}" + "".join(cells))
    p50 = "".join(f"{aggregate(rs)['p50_ms']:>{width}.1f}" for rs in by_method.values())
    lines.append(f"{'p50 ms':<24}" + p50)
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", type=retrieval.parse_sets, default=["queries"])
    p.add_argument("--home", type=Path, required=True, help="engine state dir of this bench (updated)")
    p.add_argument("--corpora", type=Path, default=retrieval.DEFAULT_CORPORA)
    p.add_argument("--git-corpora", type=Path, default=retrieval.DEFAULT_GIT_CORPORA)
    p.add_argument("--profile", choices=["small", "qwen3"], default="small")
    p.add_argument("--dims", type=int, default=STATIC_DIMS)
    p.add_argument("--variants", default="parts/zipf",
                   help=f"analysis/weighting pairs, analysis from {', '.join(ANALYSERS)}, weighting from "
                        f"{', '.join(WEIGHTINGS)}")
    p.add_argument("--vector-weights", type=lambda v: [float(x) for x in v.split(",")], default=None,
                   help="fusion weights of the static list to try (default: the engine's)")
    p.add_argument("--deep", action="store_true", help="also hybrid with the home's deep vectors")
    p.add_argument("--table", type=Path, default=None,
                   help="a saved table (.npy) to use instead of distilling; saved here when absent")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not variants or any(v.count("/") != 1 or v.split("/")[0] not in ANALYSERS
                           or v.split("/")[1] not in WEIGHTINGS for v in variants):
        print(f"--variants: analysis/weighting, from {', '.join(ANALYSERS)} / {', '.join(WEIGHTINGS)}",
              file=sys.stderr)
        return 2
    rows = [r for s in args.set for r in retrieval.load_set(s)]
    corpora_of = {s: args.git_corpora if s in retrieval.GIT_SETS else args.corpora for s in args.set}
    targets = {(r["set"], r["repo"]): retrieval.target_for(r, "root", corpora_of[r["set"]]) for r in rows}
    unique = list({t.name: t for t in targets.values()}.values())
    ctx = retrieval.Context(targets={t.name: t for t in unique})
    ctx.engine = retrieval.open_engine(args.home.expanduser(), args.profile)
    ctx.engine.models.cache = None
    try:
        retrieval.ensure_collections(ctx.engine, unique, skip_update=False, embed=False)
        embedder = ctx.engine.models.embedder()
        if embedder is None:
            print("no embedder in this profile's models dir (QMD_MODELS_DIR)", file=sys.stderr)
            return 2
        from qmd_daemon.numeric import np

        if args.table and args.table.is_file():
            vocabulary = np.load(args.table)
            print(f"distill: loaded {args.table} {vocabulary.shape}")
        else:
            start = time.perf_counter()
            vocabulary = embed_vocabulary(embedder, progress=True)
            reduced = principal_components(vocabulary, args.dims)
            secs = time.perf_counter() - start
            print(f"distill: {embedder.handle.path.name}, {len(vocabulary)} tokens -> {reduced.shape[1]} "
                  f"dims in {secs:.1f}s ({len(vocabulary) / secs:.0f} tokens/s)")
            if args.table:
                np.save(args.table, vocabulary)
        reduced = principal_components(vocabulary, args.dims)
        ids, collections, texts = chunk_texts(ctx.engine, ctx.engine.collection_ids(list(ctx.targets)))
        methods: dict[str, retrieval.MethodFn] = {"lexical": retrieval.METHODS["lexical"](ctx)}
        for weight in (args.vector_weights or [None]) if args.deep else []:
            fields = {} if weight is None else {"vector_weight": weight}
            label = "" if weight is None else f" w{weight:g}"
            methods[f"hybrid-deep{label}"] = retrieval.engine_method(max_tokens=None, **fields)(ctx)
        for variant in variants:
            analysis, weighting = variant.split("/")
            static = StaticEmbedder(embedder, reduced, ANALYSERS[analysis])
            static.table = reduced * token_weights(weighting, static, texts, len(reduced))[:, None]
            static.embed_documents(texts[:8])  # tokenizer loaded before the clock starts
            vectors, rate = embed_static(static, ids, collections, texts)
            print(f"embed static {variant}: {len(texts)} chunks at {rate:.0f} chunks/s")
            for weight in args.vector_weights or [None]:
                label = "" if weight is None else f" w{weight:g}"
                methods[f"hybrid-static {variant}{label}"] = static_method(
                    ctx, vectors, static, lexical=True, vector_weight=weight)
            methods[f"static {variant}"] = static_method(ctx, vectors, static, lexical=False)
        results: dict[str, dict[str, list[dict]]] = {s: {} for s in args.set}
        for name, fn in methods.items():
            for s in args.set:
                srows = [r for r in rows if r["set"] == s]
                results[s][name] = retrieval.run_method(fn, srows, targets, f"{s}/{name}")
    finally:
        ctx.engine.close()
    for s, by_method in results.items():
        print(f"\n== {s} (root scope, {len(by_method['lexical'])} queries): NDCG@10, delta vs lexical")
        print(format_groups(by_method))
    return 0


if __name__ == "__main__":
    sys.exit(main())
