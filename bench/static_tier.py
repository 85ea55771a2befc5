"""Static vector tier (issue 15): distil the profile's embedder into a token table, embed every
chunk of the dev corpora with it, and compare lexical with hybrid-with-static in one run.

    nice -n 10 python bench/static_tier.py --set queries --home ~/.cache/qmd-eval/home-static-root \
        [--profile small] [--dims 256] [--variants parts/idf,code-p2-n2/idf/128] [--deep] [--table FILE] \
        [--vector-weights 0.25,0.5] [--fusion add,add20,rescore]

Prints: the distillation (tokens, seconds), per variant the chunks embedded a second, then per
set and query category NDCG@10 of `lexical`, `hs <variant> w<weight> <fusion>` (hybrid: the
engine's pipeline with the static vectors as its vector list), `static <variant>` (vectors alone;
not with --no-alone), and with --deep the home's own deep vectors (`hybrid-deep`, when the home
holds them), each with its delta over lexical.

Variants are analysis/weighting[/dims]. Analysis: `raw` embeds what the deep model sees (path,
heading, signature, text); `parts` appends the parts of compound identifiers (`resolveRedirects`
-> resolve redirects), as FTS gets them; `code[-pP][-nN][-capC][-qids]` splits identifiers,
lowercases and drops punctuation, and weighs the path's and the defined names' token means P and
N against the body's (bench/static_code.py), the body cut to its first C tokens, the query
reduced to its identifiers with -qids. Weighting: `zipf` (model2vec), `idf` over these chunks,
`sif` (a / (a + p(token)) over these chunks), `none`; `-pc` removes the chunk vectors' first
principal component from chunks and queries (Arora et al. 2017). Dims: the PCA width (default
--dims; the table's own width, 384 for MiniLM, is no reduction).
Fusion (`--fusion`): `add` the list's own top 100 (the engine's), `addN` its top N only,
`rescore` the lexical candidates only, re-scored by the static cosine (no new candidates).
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
from bench.static_code import CodeAnalysis  # noqa: E402
from bench.static_embedder import (  # noqa: E402
    STATIC_DIMS,
    StaticEmbedder,
    principal_components,
    zipf_weights,
)
from qmd_daemon.models.static_table import embed_vocabulary  # noqa: E402
from qmd_daemon.text.chunk_model import embedding_text  # noqa: E402
from qmd_daemon.text.code_words import chunk_fields  # noqa: E402
from qmd_daemon.text.identifiers import identifier_parts_text  # noqa: E402

ANALYSERS = {
    "raw": None,
    "parts": lambda text: f"{text}\n{identifier_parts_text(text)}",
}
WEIGHTINGS = ("zipf", "idf", "sif", "none")
SIF_A = 1e-3  # Arora et al.'s a, with p(token) over the chunks


class MemoryVectors:
    """Chunk vectors in a numpy matrix, searched exactly; the calls the pipeline makes of a
    VectorIndex (active_model, search, pending_count)."""

    def __init__(self, fingerprint: str, ids: Any, collections: Any, matrix: Any) -> None:
        self.fingerprint, self.ids, self.collections, self.matrix = fingerprint, ids, collections, matrix

    def active_model(self) -> tuple[str, int, str]:
        return self.fingerprint, int(self.matrix.shape[1]), "float"

    def search(self, vector: list[float], collection_ids: list[int], k: int,
               within: set[int] | None = None) -> list[tuple[int, float]]:
        """The k nearest chunks of the collections (and of `within`, when given)."""
        from qmd_daemon.numeric import np

        mask = np.isin(self.collections, collection_ids)
        if within is not None:
            mask &= np.isin(self.ids, np.fromiter(within, dtype=self.ids.dtype))
        sims = self.matrix[mask] @ np.asarray(vector, dtype=np.float32)
        ids = self.ids[mask]
        top = np.argsort(-sims)[:k]
        return [(int(ids[i]), float(sims[i])) for i in top]

    def pending_count(self, collection_ids: list[int] | None = None) -> int:
        return 0


class VectorView:
    """The static list as a fusion variant sees it: at most `top` of its own hits, or only the
    chunks in `within` (the query's lexical candidates) re-scored; the rest is MemoryVectors'."""

    def __init__(self, base: MemoryVectors, top: int | None = None, within: set[int] | None = None) -> None:
        self.base, self.top, self.within = base, top, within

    def active_model(self) -> tuple[str, int, str]:
        return self.base.active_model()

    def search(self, vector: list[float], collection_ids: list[int], k: int) -> list[tuple[int, float]]:
        return self.base.search(vector, collection_ids, min(k, self.top or k), self.within)

    def pending_count(self, collection_ids: list[int] | None = None) -> int:
        return 0


def chunk_rows(engine: Any, collection_ids: list[int]) -> tuple[list[int], list[int], list[Any]]:
    """Every chunk of the collections: ids, collection ids and rows (ChunkRow), by id."""
    marks = ",".join("?" * len(collection_ids))
    pairs = engine.store.conn.execute(
        f"SELECT c.id, f.collection_id FROM chunks c JOIN files f ON f.id = c.file_id "
        f"WHERE f.collection_id IN ({marks}) ORDER BY c.id", collection_ids).fetchall()
    ids = [int(p[0]) for p in pairs]
    rows = engine.store.chunks_by_ids(ids)
    return ids, [int(p[1]) for p in pairs], [rows[i] for i in ids]


def token_weights(weighting: str, token_lists: list[list[int]], n_tokens: int) -> Any:
    """Per-token weights: model2vec's Zipf-rank SIF, IDF over these chunks, SIF over these
    chunks' token frequencies, or none."""
    from qmd_daemon.numeric import np

    if weighting == "zipf":
        return zipf_weights(n_tokens)
    if weighting == "none":
        return np.ones(n_tokens, dtype=np.float32)
    counts = np.zeros(n_tokens, dtype=np.float64)
    for tokens in token_lists:
        ids = np.asarray(tokens, dtype=np.int64)
        if weighting == "idf":
            ids = np.unique(ids)
        np.add.at(counts, ids, 1)
    if weighting == "idf":
        return np.log((len(token_lists) + 1) / (counts + 1)).astype(np.float32)
    probability = counts / max(1.0, counts.sum())
    return (SIF_A / (SIF_A + probability)).astype(np.float32)


def first_component(matrix: Any) -> Any:
    """The first right singular vector of the chunk vectors: the direction they share (SIF)."""
    from qmd_daemon.numeric import np

    _u, _s, vt = np.linalg.svd(matrix, full_matrices=False)
    return vt[0].astype(np.float32)


def embed_variant(embedder: Any, reduced: Any, variant: str, ids: list[int], collections: list[int],
                  rows: list[Any]) -> tuple[StaticEmbedder, MemoryVectors, float]:
    """The chunks' static vectors under one variant, the embedder that gives its queries the
    same treatment, and the chunks embedded a second (tokenizing, weighting and all)."""
    from qmd_daemon.numeric import np

    analysis, weighting = variant.split("/")[:2]
    code = CodeAnalysis.parse(analysis)
    pc = weighting.endswith("-pc")
    weighting = weighting.removesuffix("-pc")
    static = StaticEmbedder(embedder, reduced, code.query_text if code else ANALYSERS[analysis])
    static.embed_query("warm up the tokenizer")
    start = time.perf_counter()
    if code is not None:
        fields = [chunk_fields(r.path, r.symbols, r.heading, r.signature, r.text) for r in rows]
        tokens = static.field_tokens(fields, code.weights.cap)
        field_weights = (code.weights.path, code.weights.names, code.weights.body)
    else:
        texts = [embedding_text(r.path, r.heading, r.signature, r.text) for r in rows]
        tokens = [[t] for t in static.token_ids(texts)]
        field_weights = (1.0,)
    flat = [[t for field in fields for t in field] for fields in tokens]
    static.table = reduced * token_weights(weighting, flat, len(reduced))[:, None]
    matrix = np.asarray(static.embed_field_tokens(tokens, field_weights), dtype=np.float32)
    if pc:
        static.common = first_component(matrix)
        matrix = np.asarray(static.finish(matrix), dtype=np.float32)
    rate = len(rows) / max(1e-9, time.perf_counter() - start)
    return static, MemoryVectors(static.fingerprint, np.asarray(ids), np.asarray(collections), matrix), rate


def static_method(ctx: retrieval.Context, vectors: MemoryVectors, static: StaticEmbedder,
                  lexical: bool, vector_weight: float | None = None,
                  fusion: str = "add") -> retrieval.MethodFn:
    """The engine's pipeline with the static vectors as its vector list (lexical=False: alone);
    vector_weight None: the engine's default; fusion as --fusion."""
    from qmd_daemon.search.lexical import DEFAULT_WEIGHTS, lexical_search
    from qmd_daemon.search.pipeline import LEXICAL_CANDIDATES, SearchModels, SearchOptions, run_search
    from qmd_daemon.search.query import parse_query

    weight = SearchOptions().vector_weight if vector_weight is None else vector_weight
    top = int(fusion[3:]) if fusion.startswith("add") and fusion != "add" else None

    def run(query: str, collection: str) -> list[str]:
        options = SearchOptions(limit=retrieval.SEARCH_LIMIT, max_tokens=None, lexical=lexical,
                                boosts=lexical, vector_weight=weight)
        ids = ctx.engine.collection_ids([collection])
        within = None
        if fusion == "rescore":
            hits = lexical_search(ctx.engine.store, parse_query(query), ids, LEXICAL_CANDIDATES,
                                  DEFAULT_WEIGHTS)
            within = {h.chunk_id for h in hits}
        models = SearchModels(vectors=VectorView(vectors, top, within), embedder=static)
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


def valid_variant(variant: str) -> bool:
    """analysis/weighting[/dims] with a known analysis and weighting (see the module's doc)."""
    parts = variant.split("/")
    if len(parts) not in (2, 3) or (len(parts) == 3 and not parts[2].isdigit()):
        return False
    analysis, weighting = parts[:2]
    return ((analysis in ANALYSERS or CodeAnalysis.parse(analysis) is not None)
            and weighting.removesuffix("-pc") in WEIGHTINGS)


def valid_fusion(fusion: str) -> bool:
    return fusion in ("add", "rescore") or (fusion.startswith("add") and fusion[3:].isdigit())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", type=retrieval.parse_sets, default=["queries"])
    p.add_argument("--home", type=Path, required=True, help="engine state dir of this bench (updated)")
    p.add_argument("--corpora", type=Path, default=retrieval.DEFAULT_CORPORA)
    p.add_argument("--git-corpora", type=Path, default=retrieval.DEFAULT_GIT_CORPORA)
    p.add_argument("--profile", choices=["small", "qwen3"], default="small")
    p.add_argument("--dims", type=int, default=STATIC_DIMS, help="PCA width of variants that name none")
    p.add_argument("--variants", default="parts/zipf",
                   help=f"analysis/weighting[/dims], analysis from {', '.join(ANALYSERS)} or "
                        f"code[-pP][-nN][-capC][-qids], weighting from {', '.join(WEIGHTINGS)} [-pc]")
    p.add_argument("--vector-weights", type=lambda v: [float(x) for x in v.split(",")], default=None,
                   help="fusion weights of the static list to try (default: the engine's)")
    p.add_argument("--fusion", type=lambda v: v.split(","), default=["add"],
                   help="add (own top 100), addN (own top N), rescore (lexical candidates only)")
    p.add_argument("--no-alone", action="store_true", help="skip the static-vectors-alone rows")
    p.add_argument("--deep", action="store_true", help="also hybrid with the home's deep vectors")
    p.add_argument("--table", type=Path, default=None,
                   help="a saved table (.npy) to use instead of distilling; saved here when absent")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not variants or not all(valid_variant(v) for v in variants):
        print(f"--variants: analysis/weighting[/dims], from {', '.join(ANALYSERS)} or code-... / "
              f"{', '.join(WEIGHTINGS)} [-pc]", file=sys.stderr)
        return 2
    if not all(valid_fusion(f) for f in args.fusion):
        print("--fusion: add, addN (a number) or rescore", file=sys.stderr)
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
            secs = time.perf_counter() - start
            print(f"distill: {embedder.handle.path.name}, {len(vocabulary)} tokens in {secs:.1f}s "
                  f"({len(vocabulary) / secs:.0f} tokens/s)")
            if args.table:
                np.save(args.table, vocabulary)
        reduced: dict[int, Any] = {}
        ids, collections, chunks = chunk_rows(ctx.engine, ctx.engine.collection_ids(list(ctx.targets)))
        methods: dict[str, retrieval.MethodFn] = {"lexical": retrieval.METHODS["lexical"](ctx)}
        for weight in (args.vector_weights or [None]) if args.deep else []:
            fields = {} if weight is None else {"vector_weight": weight}
            label = "" if weight is None else f" w{weight:g}"
            methods[f"hybrid-deep{label}"] = retrieval.engine_method(max_tokens=None, **fields)(ctx)
        for variant in variants:
            dims = int(variant.split("/")[2]) if variant.count("/") == 2 else args.dims
            if dims not in reduced:
                reduced[dims] = principal_components(vocabulary, dims)
            static, vectors, rate = embed_variant(embedder, reduced[dims], variant, ids, collections, chunks)
            print(f"embed static {variant}: {len(chunks)} chunks at {rate:.0f} chunks/s")
            for fusion in args.fusion:
                for weight in args.vector_weights or [None]:
                    label = "" if weight is None else f" w{weight:g}"
                    label += "" if fusion == "add" else f" {fusion}"
                    methods[f"hs {variant}{label}"] = static_method(
                        ctx, vectors, static, lexical=True, vector_weight=weight, fusion=fusion)
            if not args.no_alone:
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
