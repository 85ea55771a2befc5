"""Static tier with a learned table (issue 15): fit the distilled token table to the deep model's
chunk vectors (bench/static_fit.py) and measure hybrid with it on repositories the fit never saw.

    QMD_MODELS_DIR=.test-cache/models nice -n 15 python bench/static_learn.py \
        --home dev=~/.cache/qmd-eval/home-static-learn-dev \
        --home twelve=~/.cache/qmd-eval/home-static-learn-12 \
        --home seven=~/.cache/qmd-eval/home-static-learn-7 \
        --table ~/.cache/qmd-eval/static-tier-minilm-vocab.npy \
        [--lambdas 0.03,0.3,3] [--vector-weights 0.5,1] [--fusion add,add10,rescore] [--own 0.05,0.2]

Each --home is a group: an index whose chunks all carry the deep model's vectors (MiniLM, small
profile), and the questions of the dev sets (`queries`, `broad`, root scope) whose collection it
holds. Homes are read, never updated (`--skip-update` semantics: copy a home before pointing
this at it, since opening an engine may migrate it).

Cross-fitted (leave one group out): the table that searches a group's repositories is fitted on
90% of the chunks of the OTHER groups only; lambda is chosen on the other 10% (mean cosine of
pooled to deep vectors), never on questions; `learned*` is the chosen lambda's table. `own N`
(--own): the product case, the table fitted only on the first N% (by chunk id, the order the
index holds them) of each of the group's own collections' chunks, at the cross-fit's lambda,
searching the whole collection.

Prints per group: the fits (seconds, tokens refitted, CG steps, validation cosine per lambda),
the chunks embedded a second with the fitted table (tokenizing, IDF and pooling in the clock),
then per set NDCG@10 with the delta over lexical of: lexical, hybrid-deep (the home's MiniLM
vectors), `hs distilled` (bench/static_tier.py's code/idf-pc, the best earlier variant), `hs e0`
(this bench's pooling with the unfitted table), `hs learned lamX` (held out), `hs own N`, and
with `dq` the same static chunk vectors searched with the deep model's question vector (the
learned table lives in its space), each at the fusion weights and fusions asked (default the
engine's: 0.5, `add`; fusions as bench/static_tier.py), and `alone` rows (the static vectors as the
only list) with how far each goes where lexical fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench import retrieval  # noqa: E402
from bench.static_code import CodeAnalysis, FieldWeights  # noqa: E402
from bench.static_embedder import StaticEmbedder, principal_components  # noqa: E402
from bench.static_fit import fit_table, mean_cosine, np, pooled, pooling_matrix  # noqa: E402
from bench.static_tier import (  # noqa: E402
    MemoryVectors,
    chunk_rows,
    embed_variant,
    format_groups,
    static_method,
    token_weights,
    valid_fusion,
)
from qmd_daemon.text.code_words import chunk_fields  # noqa: E402

ANALYSIS = CodeAnalysis(FieldWeights(), query_ids_only=False)  # the `code` variant: fields weighed 1, 1, 1
FIELD_WEIGHTS = (ANALYSIS.weights.path, ANALYSIS.weights.names, ANALYSIS.weights.body)
PRIOR_BEST = "code/idf-pc"  # docs/scale.md "Code-aware analysis, weighting and fusion"
VALIDATION_SHARE = 0.1


@dataclass
class Group:
    """One home's chunks (tokens by field, deep vectors) and its questions."""

    name: str
    home: Path
    rows: list[dict]
    targets: dict[tuple, retrieval.Target]
    ids: Any = None
    collections: Any = None
    fields: list[list[list[int]]] = field(default_factory=list)
    deep: Any = None


class DeepQueries:
    """The deep model embedding the question, answered from the static chunk vectors: a learned
    table lives in the deep model's space, and one question costs the deep model ~10-50 ms."""

    def __init__(self, fingerprint: str, deep: Any) -> None:
        self.fingerprint, self.deep = fingerprint, deep

    def embed_query(self, text: str) -> list[float]:
        return list(self.deep.embed_query(text))


def deep_vectors(engine: Any, ids: list[int]) -> Any:
    """The home's float vectors of these chunks, in their order (a chunk without one: exit)."""
    rows = dict(engine.store.conn.execute("SELECT rowid, embedding FROM chunk_vectors").fetchall())
    missing = [i for i in ids if i not in rows]
    if missing:
        raise SystemExit(f"static_learn.py: {len(missing)} chunks have no deep vector (embed the home first)")
    return np.stack([np.frombuffer(rows[i], dtype=np.float32) for i in ids])


def chunk_field_tokens(static: StaticEmbedder, chunks: list[Any]) -> list[list[list[int]]]:
    fields = [chunk_fields(r.path, r.symbols, r.heading, r.signature, r.text) for r in chunks]
    return static.field_tokens(fields)


def open_group(group: Group, profile: str) -> Any:
    """The group's engine, its collections checked as indexed by this code (never updated)."""
    ctx = retrieval.Context(targets={t.name: t for t in group.targets.values()})
    ctx.engine = retrieval.open_engine(group.home, profile)
    ctx.engine.models.cache = None
    retrieval.ensure_collections(ctx.engine, list(ctx.targets.values()), skip_update=True, embed=False)
    return ctx


def read_group(group: Group, vocabulary: Any, profile: str) -> None:
    """Fill the group's chunks: ids, collections, tokens by field, deep vectors."""
    ctx = open_group(group, profile)
    try:
        ids, collections, chunks = chunk_rows(ctx.engine, ctx.engine.collection_ids(list(ctx.targets)))
        static = StaticEmbedder(ctx.engine.models.embedder(), vocabulary, ANALYSIS.query_text)
        group.ids, group.collections = np.asarray(ids), np.asarray(collections)
        group.fields = chunk_field_tokens(static, chunks)
        group.deep = deep_vectors(ctx.engine, ids)
    finally:
        ctx.engine.close()
    norms = np.linalg.norm(group.deep, axis=1, keepdims=True)
    group.deep = group.deep / np.maximum(norms, 1e-12)
    print(f"[{group.name}] {len(ids)} chunks, {len(group.rows)} questions")


def idf(fields: list[list[list[int]]], n_tokens: int) -> Any:
    return token_weights("idf", [[t for f in fs for t in f] for fs in fields], n_tokens)


def fit_on(fields: list[list[list[int]]], deep: Any, vocabulary: Any, lam: float) -> tuple[Any, str]:
    """A table fitted on these chunks, and a line saying what the fit took."""
    start = time.perf_counter()
    pooling = pooling_matrix(fields, FIELD_WEIGHTS, idf(fields, len(vocabulary)))
    table, report = fit_table(pooling, deep, vocabulary, lam)
    secs = time.perf_counter() - start
    return table, (f"{len(fields)} chunks, {report.tokens} tokens refitted, {report.steps} CG steps "
                   f"(residual {report.residual:.1e}), {secs:.1f}s")


def fit_and_choose(fields: list[list[list[int]]], deep: Any, vocabulary: Any, lambdas: list[float],
                   label: str) -> tuple[dict[float, Any], float]:
    """A table per lambda, each fitted on the same 90% of these chunks, and the lambda whose table
    pools the other 10% closest to their deep vectors (chosen on chunks, never on questions)."""
    order = np.random.default_rng(0).permutation(len(fields))
    cut = int(len(fields) * VALIDATION_SHARE)
    held, fit = order[:cut], order[cut:]
    held_fields = [fields[i] for i in held]
    held_pooling = pooling_matrix(held_fields, FIELD_WEIGHTS, idf(held_fields, len(vocabulary)))
    e0 = mean_cosine(held_pooling, vocabulary, deep[held])
    tables: dict[float, Any] = {}
    scores: dict[float, float] = {}
    for lam in lambdas:
        tables[lam], line = fit_on([fields[i] for i in fit], deep[fit], vocabulary, lam)
        scores[lam] = mean_cosine(held_pooling, tables[lam], deep[held])
        print(f"[{label}] lam {lam:g}: {line}; held-out cosine {scores[lam]:.3f} (e0 {e0:.3f})")
    return tables, max(lambdas, key=lambda lam: scores[lam])


def first_share(group: Group, share: float) -> Any:
    """Indexes of the first `share` of each collection's chunks (by id): what a deep model
    embedding in order would have done first."""
    picked: list[int] = []
    for collection in np.unique(group.collections):
        members = np.flatnonzero(group.collections == collection)
        picked.extend(members[np.argsort(group.ids[members])][: max(1, int(len(members) * share))])
    return np.asarray(picked)


def embedded(ctx: Any, group: Group, table: Any) -> tuple[StaticEmbedder, MemoryVectors, float]:
    """The group's chunks pooled with `table` (IDF over them), its query embedder, chunks/s
    (the tokens read again inside the clock, as the tier would)."""
    start = time.perf_counter()
    ids, collections, chunks = chunk_rows(ctx.engine, ctx.engine.collection_ids(list(ctx.targets)))
    static = StaticEmbedder(ctx.engine.models.embedder(), table, ANALYSIS.query_text)
    fields = chunk_field_tokens(static, chunks)
    weights = idf(fields, len(table))
    static.table = table * weights[:, None]
    matrix = pooled(pooling_matrix(fields, FIELD_WEIGHTS, weights), table)
    rate = len(chunks) / max(1e-9, time.perf_counter() - start)
    return static, MemoryVectors(static.fingerprint, np.asarray(ids), np.asarray(collections), matrix), rate


def evaluate(group: Group, tables: dict[str, Any], vocabulary: Any, weights: list[float], profile: str,
             alone: dict[str, str], deep_query: dict[str, str], fusions: list[str]) -> dict[str, list[dict]]:
    """Every method's per-question results on the group's questions; `alone` and `deep_query`
    name the tables also searched as the only list, and with the deep model's question vector,
    and the label of each."""
    ctx = open_group(group, profile)
    try:
        methods: dict[str, retrieval.MethodFn] = {
            "lexical": retrieval.METHODS["lexical"](ctx),
            "hybrid-deep": retrieval.engine_method(max_tokens=None)(ctx),
            "alone deep": retrieval.engine_method(max_tokens=None, lexical=False, boosts=False)(ctx),
        }
        ids, collections, chunks = chunk_rows(ctx.engine, ctx.engine.collection_ids(list(ctx.targets)))
        embedder = ctx.engine.models.embedder()
        static, vectors, rate = embed_variant(embedder, principal_components(vocabulary, 256), PRIOR_BEST,
                                              ids, collections, chunks)
        print(f"[{group.name}] embed distilled {PRIOR_BEST}: {len(chunks)} chunks at {rate:.0f} chunks/s")
        for weight, fusion in product(weights, fusions):
            methods[f"hs distilled w{weight:g}{fused(fusion)}"] = static_method(
                ctx, vectors, static, True, weight, fusion)
        for name, table in tables.items():
            static, vectors, rate = embedded(ctx, group, table)
            print(f"[{group.name}] embed {name}: {len(chunks)} chunks at {rate:.0f} chunks/s")
            for weight, fusion in product(weights, fusions):
                methods[f"hs {name} w{weight:g}{fused(fusion)}"] = static_method(
                    ctx, vectors, static, True, weight, fusion)
            for weight, fusion in product(weights, fusions) if name in deep_query else []:
                methods[f"{deep_query[name]} w{weight:g}{fused(fusion)}"] = static_method(
                    ctx, vectors, DeepQueries(static.fingerprint, embedder), True, weight,  # type: ignore[arg-type]
                    fusion)
            if name in alone:
                methods[alone[name]] = static_method(ctx, vectors, static, False)
        return {name: retrieval.run_method(fn, group.rows, group.targets, f"{group.name}/{name}")
                for name, fn in methods.items()}
    finally:
        ctx.engine.close()


def fused(fusion: str) -> str:
    """A method label's fusion suffix: none for the engine's own (`add`)."""
    return "" if fusion == "add" else f" {fusion}"


def complement_line(name: str, rows: list[dict], lexical: list[dict]) -> str:
    """How far a list alone goes where lexical fails: the questions it ranks better than lexical,
    the NDCG@10 it adds there, and the correlation of its per-question NDCG@10 with lexical's
    (a list that adds to BM25 must be right on other questions, not the same ones)."""
    mine = np.array([r["ndcg@10"] for r in rows])
    base = np.array([r["ndcg@10"] for r in lexical])
    better = mine > base
    corr = float(np.corrcoef(mine, base)[0, 1]) if mine.std() > 0 and base.std() > 0 else float("nan")
    return (f"{name:<28} better than lexical on {int(better.sum()):>3} questions "
            f"(+{float((mine - base)[better].sum()) / len(rows):.3f} NDCG@10 a question), "
            f"correlation with lexical {corr:.2f}")


def groups_of(homes: list[str], corpora: Path, git_corpora: Path) -> list[Group]:
    """One Group per NAME=HOME, with the questions whose collection the home holds."""
    from qmd_daemon.config import IndexConfig

    rows = [r for s in ("queries", "broad") for r in retrieval.load_set(s)]
    out = []
    for spec in homes:
        name, _, path = spec.partition("=")
        home = Path(path).expanduser()
        held = set(IndexConfig.load(home / "config" / "index.yml").collections())
        targets = {(r["set"], r["repo"]): retrieval.target_for(
            r, "root", git_corpora if r["set"] in retrieval.GIT_SETS else corpora) for r in rows}
        mine = [r for r in rows if targets[(r["set"], r["repo"])].name in held]
        out.append(Group(name, home, mine, {k: t for k, t in targets.items() if t.name in held}))
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    floats = lambda v: [float(x) for x in v.split(",") if x]  # noqa: E731
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--home", action="append", required=True, help="NAME=HOME, two or more")
    p.add_argument("--table", type=Path, required=True,
                   help="the distilled vocabulary (.npy, bench/static_tier.py --table)")
    p.add_argument("--corpora", type=Path, default=retrieval.DEFAULT_CORPORA)
    p.add_argument("--git-corpora", type=Path, default=retrieval.DEFAULT_GIT_CORPORA)
    p.add_argument("--profile", choices=["small"], default="small")
    p.add_argument("--lambdas", type=floats, default=[0.03, 0.3, 3.0])
    p.add_argument("--vector-weights", type=floats, default=[0.5])
    p.add_argument("--fusion", type=lambda v: v.split(","), default=["add"],
                   help="add (the engine's), addN (the list's own top N), rescore (lexical's candidates)")
    p.add_argument("--own", type=floats, default=[],
                   help="product case: fit on the first N of each collection")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if len(args.home) < 2 or not all("=" in h for h in args.home):
        print("--home NAME=HOME, at least two (each is held out from the fit that searches it)",
              file=sys.stderr)
        return 2
    if not all(valid_fusion(f) for f in args.fusion):
        print("--fusion: add, addN (a number) or rescore", file=sys.stderr)
        return 2
    if not args.table.is_file() or not args.lambdas:
        print(f"--table {args.table}: no such file (distil it with bench/static_tier.py --table)",
              file=sys.stderr)
        return 2
    vocabulary = np.load(args.table)
    groups = groups_of(args.home, args.corpora.expanduser(), args.git_corpora.expanduser())
    for group in groups:
        read_group(group, vocabulary, args.profile)
    results: dict[str, dict[str, list[dict]]] = {}
    for group in groups:
        others = [g for g in groups if g is not group]
        fields = [f for g in others for f in g.fields]
        deep = np.concatenate([g.deep for g in others])
        label = f"fit for {group.name} on {'+'.join(g.name for g in others)}"
        fitted, lam = fit_and_choose(fields, deep, vocabulary, args.lambdas, label)
        tables = {"e0": vocabulary, **{f"learned lam{other:g}": table for other, table in fitted.items()}}
        for share in args.own:
            picked = first_share(group, share)
            tables[f"own {share:g}"], line = fit_on([group.fields[i] for i in picked], group.deep[picked],
                                                    vocabulary, lam)
            whole = pooling_matrix(group.fields, FIELD_WEIGHTS, idf(group.fields, len(vocabulary)))
            cosine = mean_cosine(whole, tables[f"own {share:g}"], group.deep)
            print(f"[own {share:g} of {group.name}] lam {lam:g}: {line}; cosine to deep {cosine:.3f}")
        alone = {"e0": "alone e0", f"learned lam{lam:g}": "alone learned*"}
        deep_query = {f"learned lam{lam:g}": "hs learned* dq",
                      **{f"own {n:g}": f"hs own {n:g} dq" for n in args.own}}
        for name, by_method in evaluate(group, tables, vocabulary, args.vector_weights, args.profile,
                                        alone, deep_query, args.fusion).items():
            for row in by_method:
                results.setdefault(row["set"], {}).setdefault(name, []).append(row)
        print(f"[{group.name}] chosen lambda {lam:g}")
    for set_name, by_method in results.items():
        count = len(by_method["lexical"])
        print(f"\n== {set_name} (root scope, {count} questions): NDCG@10, delta vs lexical")
        print(format_groups(by_method))
        for name in (n for n in by_method if n.startswith("alone")):
            print(complement_line(name, by_method[name], by_method["lexical"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
