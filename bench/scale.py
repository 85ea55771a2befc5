"""Issue 15's Done-when rows in one run: lexical search over all collections of a big index
(questions p50, bug-report p50/p95), no-change update, edit 10 files + update, and KNN over 1M x
1024 int8 vectors (all collections / one: p50 and recall@10), with the machine's load average.

    python bench/scale.py [--home DIR] [--target-chunks 240000] [--build-minutes 15] [--seed-home DIR]
                          [--compare] [--search-only] [--knn-cache DIR | --no-knn] [--edits N]

The index is built once and reused: --home (default ~/.cache/qmd-eval/home-scale) keeps the config
and index, and copies of corpus trees live under HOME/trees (copies, never the shared corpora, are
what the edit step writes to). A missing home starts from --seed-home (`cp -a` of an indexed eval
home; default ~/.cache/qmd-eval/home-whole, the 11 release-tarball corpora) when it exists; then
collections are added until the index holds --target-chunks or --build-minutes have passed: the
git-checkout corpora, then copies of the release corpora. Search is lexical (no model is pulled
in the bench home). Times are in-process `Engine.update` / `Engine.search` calls, the daemon's own
path; the edit step updates the edited collection alone (what the watcher triggers) and all.
Search rows give wall and CPU ms per query; --compare runs them again in the same process with
the long-query pruning off (`unpruned_*`: every term ORed, every named definition a candidate).
A home copied by hand from another bench home (`cp -a`) has its copied collections pointed at its
own HOME/trees at start, so the edit step never writes to the other home's files.
KNN rows reuse bench/knn.py's 1M x 1024 int8 tier in --knn-cache (built there by `bench/knn.py
--sizes 1000000 --cache DIR`; searched as it is, never rebuilt or rewritten here): p50 of
`VectorIndex.search` (k=100) and recall@10 against the float top 10. The static vector tier's row
(>= 300 chunks/s) is bench/static_tier.py's. --edits N: N writing updates in a row (10 files of the
edited collection each), their wall and CPU seconds (p50, max; CPU total) and the FTS5 segments after each
(max, last; each update's in --json): what FTS5's segment merging costs an edit's refresh over time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

EVAL_DIR = Path(os.environ.get("QMD_EVAL_DIR", "/work/shared/eval"))
CORPORA = Path("~/.cache/qmd-eval/corpora").expanduser()
GIT_CORPORA = Path("~/.cache/qmd-eval/git-corpora").expanduser()
EDITED_FILES = 10


def _chunks(engine: Any) -> int:
    return sum(int(c["chunks"]) for c in engine.store.collection_stats())


def _candidates(home: Path) -> list[tuple[str, Path]]:
    """(collection name, tree) in the order the build adds them: one copy first (the edit step
    writes to it), the git checkouts, then more copies. Copies are made on demand."""
    copies = [(f"{p.name}-copy{n}", home / "trees" / f"copy{n}" / p.name)
              for n in (1, 2, 3) for p in sorted(CORPORA.iterdir()) if p.is_dir()] if CORPORA.exists() else []
    git = [(p.name, p) for p in sorted(GIT_CORPORA.iterdir())
           if p.is_dir() and not p.name.startswith(".")] if GIT_CORPORA.exists() else []
    return copies[:1] + git + copies[1:]


def build(engine: Any, home: Path, target: int, minutes: float) -> None:
    from qmd_daemon.errors import UsageError

    deadline = time.monotonic() + minutes * 60
    known = {c.path for c in engine.collections().values()}
    for name, tree in _candidates(home):
        total = _chunks(engine)
        if tree in known or name in engine.collections():
            continue
        has_copy = any("-copy" in n for n in engine.collections())
        if (total >= target and has_copy) or time.monotonic() > deadline:
            break
        if not tree.exists():
            shutil.copytree(CORPORA / tree.name, tree, symlinks=True)  # copy2: mtimes kept
        try:
            engine.add_collection(tree, name)
            t0 = time.perf_counter()
            engine.update([name], progress=False)
        except UsageError as exc:
            print(f"  skipped {name}: {exc}", file=sys.stderr)
            continue
        added = _chunks(engine) - total
        print(f"  + {name}: {added} chunks in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def own_trees(config_file: Path, home: Path) -> None:
    """Point every collection in another bench home's trees/ (a home copied with `cp -a`) at this
    home's copy of the tree, which the copy brought along."""
    from dataclasses import replace

    from qmd_daemon.config import IndexConfig

    with IndexConfig.editing(config_file) as config:
        for collection in config.collections().values():
            copy, trees = collection.path.parent, collection.path.parent.parent
            ours = home / "trees" / copy.name / collection.path.name
            if trees.name == "trees" and trees != home / "trees" and ours.is_dir():
                config.set_collection(replace(collection, path=ours))


def _edit_target(engine: Any) -> tuple[str, list[Path]]:
    """A collection whose tree is one of the bench's own copies, and 10 of its code files."""
    for name, config in engine.collections().items():
        if "-copy" in name:
            files = sorted(config.path.rglob("*.py"))[:: 7][:EDITED_FILES]
            if len(files) == EDITED_FILES:
                return name, files
    raise SystemExit("no copied collection to edit: raise --target-chunks so the build makes one")


def _timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _full_relink_baseline(engine: Any, edited: str) -> dict[str, float]:
    """What an edit cost before links were incremental: a full re-link of the collection (the
    edited one, and the one with the most doc chunks), timed in this run."""
    from qmd_daemon.ingest.links import LinkChanges, update_links

    store = engine.store
    biggest = max(engine.collections(), key=lambda n: len(store.doc_chunks(store.collection_id(n))))
    out: dict[str, float] = {}
    for label, name in (("edited", edited), (f"largest_{biggest}", biggest)):
        t0 = time.perf_counter()
        with store.transaction():
            update_links(store, store.collection_id(name), LinkChanges(everything=True))
        out[f"full_relink_{label}_s"] = time.perf_counter() - t0
    return out


def measure(
    engine: Any, repeat: int, compare: bool = False, search_only: bool = False, edits: int = 0
) -> dict[str, Any]:
    engine.update(progress=False)  # settle anything changed since the build
    out: dict[str, Any] = {"chunks": _chunks(engine), "collections": len(engine.collections())}
    if not search_only:
        out.update(refresh_rows(engine, repeat))
    if edits:
        out.update(edit_series_rows(engine, edits))
    out.update(search_rows(engine))
    if compare:
        with _pruning_off():
            out.update(search_rows(engine, "unpruned_"))
    out["load_average"] = os.getloadavg()
    return out


def refresh_rows(engine: Any, repeat: int) -> dict[str, float]:
    """No-change update, edit 10 files + update (the edited collection, then all), and the full
    re-link those edits cost before links were incremental."""
    out: dict[str, float] = {}
    out["no_change_update_s"] = statistics.median(_timed(lambda: engine.update(progress=False))
                                                  for _ in range(repeat))
    name, files = _edit_target(engine)
    originals = {f: f.read_bytes() for f in files}
    try:
        for scope, names in (("collection", [name]), ("all", None)):
            for n, f in enumerate(files):
                added = f"\n\ndef scale_bench_edit_{scope}_{n}():\n    return {n}\n"
                f.write_bytes(originals[f] + added.encode())
            t0 = time.perf_counter()
            reports = engine.update(names, progress=False)
            out[f"edit10_update_{scope}_s"] = time.perf_counter() - t0
            out[f"edit10_relinked_{scope}"] = sum(r.relinked for r in reports)
    finally:
        for f, data in originals.items():
            f.write_bytes(data)
        engine.update([name], progress=False)
    out.update(_full_relink_baseline(engine, name))
    return out


def edit_series_rows(engine: Any, count: int) -> dict[str, float]:
    """`count` writing updates of the edited collection, 10 files each (a new function appended
    to each, numbered, so every update writes), then the files as they were."""
    name, files = _edit_target(engine)
    originals = {f: f.read_bytes() for f in files}
    wall, cpu, segments = [], [], []
    try:
        for n in range(count):
            for f in files:
                f.write_bytes(originals[f] + f"\n\ndef scale_bench_series_{n}():\n    return {n}\n".encode())
            c0, t0 = time.process_time(), time.perf_counter()
            engine.update([name], progress=False)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            segments.append(engine.store.fts_segments())
    finally:
        for f, data in originals.items():
            f.write_bytes(data)
        engine.update([name], progress=False)
    return {
        "edits": count,
        "edits_update_p50_s": statistics.median(wall),
        "edits_update_max_s": max(wall),
        "edits_update_cpu_p50_s": statistics.median(cpu),
        "edits_update_cpu_max_s": max(cpu),
        "edits_update_cpu_total_s": sum(cpu),
        "edits_segments_max": max(segments),
        "edits_segments_last": segments[-1],
        "edits_series": [[round(w, 3), round(c, 3), k] for w, c, k in zip(wall, cpu, segments, strict=True)],
    }


def _p50_p95(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values), values[min(len(values) - 1, int(0.95 * len(values)))]


def search_rows(engine: Any, prefix: str = "") -> dict[str, float]:
    """Questions and bug reports over all collections, lexical: wall and CPU ms per query (on a
    shared machine wall time mostly measures the wait for a core)."""
    from qmd_daemon.search.pipeline import SearchOptions

    options = SearchOptions(vectors=False, expand=False, rerank=False)
    out: dict[str, float] = {}
    for kind, source in (("questions", "dev-queries.jsonl"), ("bug_reports", "dev-issues.jsonl")):
        rows = [json.loads(line) for line in (EVAL_DIR / source).open(encoding="utf-8")]
        wall, cpu = [], []
        for row in rows:
            c0, t0 = time.process_time(), time.perf_counter()
            engine.search(row["query"], None, limit=10, options=options)
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        out[f"{prefix}{kind}_p50_ms"], out[f"{prefix}{kind}_p95_ms"] = _p50_p95(wall)
        out[f"{prefix}{kind}_cpu_p50_ms"], out[f"{prefix}{kind}_cpu_p95_ms"] = _p50_p95(cpu)
    return out


@contextmanager
def _pruning_off() -> Iterator[None]:
    """The search as it was before issue 15's pruning: the any-term pass ORs every term, and every
    name a question says adds its definitions as candidates. (Searching every collection without
    the collection filter stays on: it does not change results.)"""
    from qmd_daemon.search import lexical, pipeline

    kept = lexical.LOOSE_POSTINGS, lexical.MAX_LOOSE_SHARE, pipeline.MAX_NAME_DEFINITIONS
    lexical.LOOSE_POSTINGS, lexical.MAX_LOOSE_SHARE, pipeline.MAX_NAME_DEFINITIONS = 10**12, 1.0, 10**12
    try:
        yield
    finally:
        lexical.LOOSE_POSTINGS, lexical.MAX_LOOSE_SHARE, pipeline.MAX_NAME_DEFINITIONS = kept


KNN_SIZE, KNN_DIM, KNN_QUERIES, KNN_K = 1_000_000, 1024, 20, 100


def knn_rows(cache: Path) -> dict[str, float]:
    """p50 ms and recall@10 (against the float top 10) of VectorIndex.search over bench/knn.py's
    1M x 1024 int8 tier, all 30 collections and the large one."""
    from bench import knn
    from qmd_daemon.store.vectors import VectorIndex

    path = cache / f"{KNN_SIZE}x{KNN_DIM}-int8.sqlite"
    if not path.exists():
        print(f"  no KNN tier at {path}: build it with bench/knn.py --sizes {KNN_SIZE} --cache {cache}",
              file=sys.stderr)
        return {}
    store = knn._open(path)
    try:
        knn.read_through(path)
        vectors = VectorIndex(store, quantization="int8")
        scopes = {"all": list(range(1, knn.COLLECTIONS + 1)), "one": [1]}
        queries = knn._queries(store, KNN_DIM, KNN_QUERIES, "int8")
        asked = [(ids, q) for ids in scopes.values() for q in queries]
        truth = knn.float_top10(store, KNN_SIZE, KNN_DIM, "int8", asked)
        out: dict[str, float] = {}
        for n, (scope, ids) in enumerate(scopes.items()):
            vectors.search(asked[n * KNN_QUERIES][1].tolist(), ids, KNN_K)  # the first one loads the codes
            wall, recalls = [], []
            for at in range(n * KNN_QUERIES, (n + 1) * KNN_QUERIES):
                t0 = time.perf_counter()
                found = vectors.search(asked[at][1].tolist(), ids, KNN_K)
                wall.append((time.perf_counter() - t0) * 1000)
                recalls.append(len(truth[at] & {h[0] for h in found[:10]}) / 10)
            out[f"knn_{scope}_p50_ms"] = statistics.median(wall)
            out[f"knn_{scope}_recall_at_10"] = statistics.mean(recalls)
        return out
    finally:
        store.close()


DONE_WHEN = (  # issue 15: (what, result key, target, unit)
    ("476k chunks: bug reports p95, wall", "bug_reports_p95_ms", 150.0, "ms"),
    ("476k chunks: bug reports p95, CPU", "bug_reports_cpu_p95_ms", 150.0, "ms"),
    ("476k chunks: questions p50, wall", "questions_p50_ms", 40.0, "ms"),
    ("476k chunks: questions p50, CPU", "questions_cpu_p50_ms", 40.0, "ms"),
    ("1M x 1024 KNN all collections p50", "knn_all_p50_ms", 100.0, "ms"),
    ("1M x 1024 KNN one collection p50", "knn_one_p50_ms", 100.0, "ms"),
    ("1M x 1024 KNN all collections recall@10", "knn_all_recall_at_10", -0.95, ""),
    ("1M x 1024 KNN one collection recall@10", "knn_one_recall_at_10", -0.95, ""),
    ("edit 10 files + refresh (the collection)", "edit10_update_collection_s", 1.0, "s"),
    ("the same, slowest of --edits updates", "edits_update_max_s", 1.0, "s"),
    ("no-change refresh, all collections", "no_change_update_s", 2.0, "s"),
)


def print_done_when(result: dict[str, Any]) -> None:
    """Issue 15's Done-when rows against their targets (a negative target: at least its value)."""
    print(f"\nissue 15, done when ({result['chunks']} chunks, {result['collections']} collections, "
          f"load average {' '.join(f'{x:.1f}' for x in result['load_average'])}):")
    for what, key, target, unit in DONE_WHEN:
        if key not in result:
            print(f"  {what:44} not measured in this run")
            continue
        value, bound = result[key], abs(target)
        met = value >= bound if target < 0 else value <= bound
        sign = ">=" if target < 0 else "<="
        print(f"  {what:44} {value:9.3f} {unit:2} (target {sign} {bound:g}: {'met' if met else 'NOT met'})")
    print("  fast vector tier >= 300 chunks/s, hybrid +0.02 NDCG@10: bench/static_tier.py (not this script)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, default=Path("~/.cache/qmd-eval/home-scale").expanduser())
    ap.add_argument("--seed-home", type=Path, default=Path("~/.cache/qmd-eval/home-whole").expanduser())
    ap.add_argument("--target-chunks", type=int, default=240_000)
    ap.add_argument("--build-minutes", type=float, default=15.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--compare", action="store_true",
                    help="run the search rows again with the pruning off (unpruned_* rows)")
    ap.add_argument("--search-only", action="store_true", help="skip the refresh and edit rows")
    ap.add_argument("--knn-cache", type=Path, default=Path("~/.cache/qmd-eval/knn-bench-knn-recall"),
                    help="bench/knn.py's --cache holding the 1M x 1024 int8 tier")
    ap.add_argument("--no-knn", action="store_true", help="skip the KNN rows")
    ap.add_argument("--edits", type=int, default=0, help="N writing updates in a row (edits_* rows)")
    args = ap.parse_args()
    home = args.home.expanduser()
    if not home.exists() and args.seed_home.exists():
        shutil.copytree(args.seed_home, home, symlinks=True)
    os.environ["QMD_DAEMON_HOME"] = str(home)
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    settings = Settings.from_env()
    own_trees(settings.config_file, home)
    engine = Engine(settings)
    try:
        build(engine, home, args.target_chunks, args.build_minutes)
        result = measure(engine, args.repeat, args.compare, args.search_only, args.edits)
    finally:
        engine.close()
    if not args.no_knn:
        result.update(knn_rows(args.knn_cache.expanduser()))
        result["load_average"] = os.getloadavg()
    for key, value in result.items():
        if not key.endswith("_series"):  # per update: --json only
            print(f"{key:28} {value:.3f}" if isinstance(value, float) else f"{key:28} {value}")
    print_done_when(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
