"""`qmd-daemon bench --auto`: which local models can this machine run, tier by tier and role by role?

Per device (GPU first when llama.cpp can offload, then CPU), in a child process with a time limit
(`QMD_BENCHMARK_DEVICE_TIMEOUT`, 600 s; a timeout fails that device), on `benchmark_fixtures/` in a
temporary index removed afterwards:

1. load (warm) the models; a role that will not load is off, 2. the static pass over every chunk,
token rows distilled as it goes (the models folder is seen without earlier rows, so the rate is a
fresh install's), 3. the deep pass over every chunk, 4. one untimed warm-up query, 5. three timed
queries per set of roles, each as search really runs it (the pipeline's own latency budget and
rerank depth, `SearchOptions()`), with the result cache emptied between sets: vectors (deep on),
then, with the deep tier as decided, vectors + expansion, vectors + reranking, then both.

Per tier, at the measured rates, for the index's chunks (those of `--repo` folders, indexed
lexically into the temporary index to count them; else `--index-chunks`; else an assumed 20,000):
the static tier is on when they get static vectors within `QMD_BENCHMARK_MAX_STATIC_MINUTES` (10);
the deep pass when they embed within `QMD_BENCHMARK_MAX_EMBED_MINUTES` (60) and a vector query takes
<= `QMD_BENCHMARK_MAX_QUERY_SECONDS` (5). Expansion and reranking need neither tier (they work on
lexical's candidates too) but are measured only on a device that passes, with the deep tier as
decided: each on when the budget did not cut it and the query stays within that time; both on
only when, together, neither was cut. A device passes when a vector tier is on: the static tier
alone gives hybrid search minutes after install; without either Auto installs nothing. Every
query is bounded by the budget, so a slow CPU ends in seconds per query, not minutes.
Output (`--json`): `{"profile", "passed", "device", "roles", "decision", "rows" (each device's
ROW_KEYS, what the installer prints), "devices": [{device,
querySeconds, staticChunksPerSecond, staticMinutes, chunksPerSecond, embedMinutes, roles: {static,
deep, expand, rerank}, sets, reasons, passed, ...}]}`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qmd_daemon.settings import Settings, SetupSettings
from qmd_daemon.setup.paths import REPO_ROOT

if TYPE_CHECKING:  # the engine is imported where it runs: in the target environment
    from qmd_daemon.engine import Engine

DEFAULT_FIXTURES = REPO_ROOT / "benchmark_fixtures"
COLLECTION = "qmd-bench-fixtures"


ASSUMED_INDEX_CHUNKS = 20_000  # a mid-size repository, when the caller does not say
# per device: what the echo and the installer's summary show (`rows` in the summary)
ROW_KEYS = ("device", "querySeconds", "staticChunksPerSecond", "staticMinutes", "chunksPerSecond",
            "embedMinutes", "roles", "passed")
ROLE_SETS: dict[str, dict[str, bool]] = {  # measured in this order; "both" only when each passed
    "vectors": {"expand": False, "rerank": False},  # with the deep tier on: its query time counts
    "static": {"expand": False, "rerank": False},  # with the deep tier off, when it was decided off
    "expand": {"expand": True, "rerank": False},
    "rerank": {"expand": False, "rerank": True},
    "both": {"expand": True, "rerank": True},
}


def thresholds() -> dict[str, float]:
    knobs = SetupSettings.from_env()
    return {
        "maxQuerySeconds": knobs.benchmark_max_query_seconds,
        "maxEmbedMinutes": knobs.benchmark_max_embed_minutes,
        "maxStaticMinutes": knobs.benchmark_max_static_minutes,
    }


def fixtures_dir(path: Path | None = None) -> Path:
    found = path or SetupSettings.from_env().benchmark_fixtures or DEFAULT_FIXTURES
    if not (found / "queries.json").is_file():
        raise FileNotFoundError(f"benchmark fixtures not found at {found} (need queries.json)")
    return found


def busy_note(load: float | None, cores: int) -> str:
    """What to tell a user whose embedder was turned off on a box busier than its cores: the rate
    is measured over a few seconds by the clock and moves with the load (a fresh install: 9.61
    chunks/s idle, 4.57 under load 6-10, where Auto said No). CPU time is no steadier: llama.cpp's
    threads spin while idle, so it overstates the work on a quiet box, not on a busy one."""
    if load is None or load <= cores:
        return ""
    return f"; measured on a busy box (load {load:.1f} on {cores} cores): run Auto again when it is quieter"


def _duration(minutes: float) -> str:
    """Minutes as a person reads them: seconds, minutes, hours or days."""
    if minutes == float("inf"):
        return "forever"
    if minutes < 1:
        return f"{minutes * 60:.0f} s"
    if minutes < 120:
        return f"{minutes:.0f} min"
    hours = minutes / 60
    return f"{hours:.1f} h" if hours < 10 else f"{hours:.0f} h" if hours < 48 else f"{hours / 24:,.0f} days"


@dataclass(frozen=True)
class StaticRates:
    """The static pass as measured on the fixtures, split in its two costs: distilling a token row
    (once per token, ever, so bounded by the vocabulary) and pooling a chunk (per chunk). A rate
    per chunk over 23 chunks would be mostly distillation (558 rows) and say 24 chunks/s, where
    a large index pools at hundreds a second once its tokens have rows."""

    chunks: int
    seconds: float
    distilled: int
    distill_seconds: float
    n_vocab: int

    def minutes(self, index_chunks: int) -> float:
        """An upper bound for the index: as many new rows per chunk as the fixtures needed, for
        every chunk, capped at the whole vocabulary; plus the pooling of every chunk."""
        if self.chunks <= 0:
            return float("inf")
        rows = min(float(self.n_vocab), self.distilled / self.chunks * index_chunks)
        per_row = self.distill_seconds / self.distilled if self.distilled else 0.0
        per_chunk = max(self.seconds - self.distill_seconds, 0.0) / self.chunks
        return (rows * per_row + index_chunks * per_chunk) / 60


def _tier(minutes: float, index_chunks: int, limit: float, rate: str) -> tuple[bool, str]:
    """Whether the index's chunks get this tier's vectors within `limit` minutes, and why."""
    if minutes <= limit:
        return True, f"{index_chunks:,} chunks in {_duration(minutes)} at {rate}"
    return False, f"{index_chunks:,} chunks would take {_duration(minutes)} at {rate} (limit {limit:g} min)"


def _per_second(chunks: int, minutes: float) -> str:
    return f"{chunks / (minutes * 60):,.0f}/s" if 0 < minutes < float("inf") else "0/s"


def choose_roles(
    static: StaticRates | None,
    deep_rate: float,
    index_chunks: int,
    sets: dict[str, dict[str, Any]],
    limits: dict[str, float],
) -> tuple[dict[str, bool], dict[str, str]]:
    """Per tier and role on/off and the reason, from the measured rates (`static` None: the tier
    could not be built) and the timed sets (see the module)."""
    max_q = limits["maxQuerySeconds"]
    static_minutes = static.minutes(index_chunks) if static is not None else float("inf")
    static_on, static_why = _tier(static_minutes, index_chunks, limits["maxStaticMinutes"],
                                  f"{_per_second(index_chunks, static_minutes)}, distillation included")
    deep_minutes = index_chunks / deep_rate / 60 if deep_rate > 0 else float("inf")
    deep, deep_why = _tier(deep_minutes, index_chunks, limits["maxEmbedMinutes"], f"{deep_rate:g}/s")
    query = (sets.get("vectors") or {}).get("seconds")
    if deep and (query is None or query > max_q):
        deep, deep_why = False, f"{deep_why}, but a vector query took {query} s (limit {max_q:g} s)"
    roles = {"static": static_on, "deep": deep, "expand": False, "rerank": False}
    reasons = {"static": static_why, "deep": deep_why}
    for role in ("expand", "rerank"):
        measured = sets.get(role)
        if not (static_on or deep) or not measured:
            reasons[role] = "the model did not load" if static_on or deep else "not measured (no vector tier)"
            continue
        roles[role] = not measured["cut"] and measured["seconds"] <= max_q
        cut = measured["cut"]
        reasons[role] = (
            f"too slow for the search's latency budget ({cut}; query {measured['seconds']} s)" if cut
            else f"query {measured['seconds']} s, ran in full within the budget"
        )
    both = sets.get("both")
    if roles["expand"] and roles["rerank"] and both and (both["cut"] or both["seconds"] > max_q):
        roles["expand"] = False  # together they miss the budget: reranking orders what the user sees
        reasons["expand"] = f"with reranking the budget cut a step ({both['cut'] or both['seconds']})"
    return roles, reasons


def _time_set(engine: Any, queries: list[str], collection: str, expand: bool, rerank: bool) -> dict[str, Any]:
    """Median wall time of QUERIES as search runs them by default (budget, rerank depth), and the
    steps the budget cut in that median query. The result cache is emptied first: each set pays
    for its own model calls, as a user's new question does."""
    from qmd_daemon.search.pipeline import SearchOptions, SearchTrace

    engine.store.conn.execute("DELETE FROM llm_cache")  # the temporary index's own table
    options = SearchOptions(expand=expand, rerank=rerank)
    runs = []
    for query in queries:
        trace = SearchTrace()
        t0, c0 = time.perf_counter(), time.process_time()
        engine.search(query, [collection], limit=options.limit, options=options, trace=trace)
        runs.append((time.perf_counter() - t0, time.process_time() - c0, trace))
    reranked_each = [r[2].reranked for r in runs]
    runs.sort(key=lambda r: r[0])
    wall, cpu, trace = runs[len(runs) // 2]
    return {
        "seconds": round(wall, 3),
        "cpuSeconds": round(cpu, 3),
        "reranked": trace.reranked,
        "rerankedEach": reranked_each,  # in query order: a slow pair slows the pace planned after it
        "expanded": len(trace.expanded),
        "cut": "; ".join(trace.budget_cuts),
        "budgetMs": options.budget_ms,
        "rerankCandidates": options.rerank_candidates if rerank else 0,
    }


def workdir_settings(workdir: Path) -> Settings:
    """The user's settings with every folder the engine writes moved into `workdir`, which the
    parent removes: "Auto = No installs nothing" (the cache folder held the walk's listings when
    the fixtures lie outside git, as in a pip or tarball install). The models stay where the
    parent's QMD_MODELS_DIR points."""
    return replace(
        Settings.from_env(),
        config_dir=workdir / "config",
        cache_dir=workdir / "cache",
        index_path=workdir / "index.sqlite",
        state_dir=workdir / "state",
    )


def measure_device(
    device: str,
    profile: str,
    fixtures: Path,
    workdir: Path,
    say: Callable[[str], None] = lambda _: None,
    index_chunks: int | None = None,
    repos: list[Path] | None = None,
) -> dict[str, Any]:
    """One device, in this process (the child side of `auto`); `say` gets a line per step, as the
    steps take minutes on a slow machine."""
    from qmd_daemon.config import IndexConfig
    from qmd_daemon.engine import Engine

    queries = json.loads((fixtures / "queries.json").read_text(encoding="utf-8"))
    limits = thresholds()
    settings = workdir_settings(workdir)
    config = IndexConfig.load(settings.config_file)
    config.set_models({"profile": profile, "device": device})
    config.save()
    engine = Engine(settings)
    result: dict[str, Any] = {
        "device": device,
        "profile": profile,
        "querySeconds": None,
        "chunksPerSecond": None,
        "passed": False,
        "indexChunks": index_chunks or ASSUMED_INDEX_CHUNKS,
        "indexChunksAssumed": not index_chunks,
    }
    try:
        say("loading the models")
        t0 = time.perf_counter()
        loaded = _load_models(engine)
        reasons = engine.models.status()["roles"]
        result["unloaded"] = {
            r: reasons[r].get("reason", "unavailable") for r, m in loaded.items() if m is None
        }
        if loaded["embed"] is None:
            result["error"] = f"embed: {result['unloaded']['embed']}"
            return result
        result["device_used"] = engine.models.device
        result["warmSeconds"] = round(time.perf_counter() - t0, 3)
        if repos:
            result["indexChunks"] = _count_chunks(engine, repos, say)
            result["indexChunksAssumed"] = False
        engine.add_collection(fixtures, COLLECTION)
        update = engine.update([COLLECTION], progress=False)[0]
        result["files"] = update.files
        say(f"static vectors for {update.chunks_added} chunks of {update.files} files (token rows distilled)")
        static = engine.embed_static(engine.collection_ids([COLLECTION]), progress=False)
        rates = _static_rates(engine, static)
        minutes = rates.minutes(result["indexChunks"]) if rates is not None else float("inf")
        if rates is not None and 0 < minutes < float("inf"):
            result.update(
                staticChunksPerSecond=round(result["indexChunks"] / (minutes * 60), 1),
                staticMinutes=round(minutes, 2),
                staticFixturesChunksPerSecond=_rate(rates.chunks, rates.seconds),
                staticDistilled=rates.distilled,
                staticDistillSeconds=rates.distill_seconds,
            )
        say(f"embedding {update.chunks_added} chunks (the deep pass)")
        t0 = time.perf_counter()
        report = engine.embed([COLLECTION], progress=False).as_dict()  # the static pass is done
        embed_s = time.perf_counter() - t0
        result["loadAverage"] = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
        chunks = int(report.get("embedded") or 0) + int(report.get("copied") or 0)
        result["chunks"] = chunks
        cps = _rate(chunks, embed_s)
        result["chunksPerSecond"] = cps
        result["embedMinutes"] = round(result["indexChunks"] / cps / 60, 1) if cps else None
        timed = queries["timed"][:3]
        sets: dict[str, dict[str, Any]] = {}
        tiers = choose_roles(rates, cps, result["indexChunks"], {"vectors": {"seconds": 0.0}}, limits)[0]
        if tiers["deep"]:  # by its rate; a vector query must be quick too
            say("a warm-up query (every model that loaded, within the budget, as a first question)")
            _warm_up(engine, queries["warmup"])
            say(f"{len(timed)} timed queries: vectors")
            sets["vectors"] = _time_set(engine, timed, COLLECTION, **ROLE_SETS["vectors"])
            tiers = choose_roles(rates, cps, result["indexChunks"], sets, limits)[0]
        if tiers["static"] and not tiers["deep"]:  # the other sets as search will run here
            _switch_deep_off(settings.config_file)
            say("deep vectors off: the models loaded again, then a warm-up query as search will run")
            loaded = _load_models(engine)  # the set was built again with the switch: no timed step loads
            _warm_up(engine, queries["warmup"])
            say(f"{len(timed)} timed queries: static vectors")
            sets["static"] = _time_set(engine, timed, COLLECTION, **ROLE_SETS["static"])
        for name, flags in ROLE_SETS.items():
            wanted = [r for r, on in flags.items() if on]
            if not wanted or any(loaded[r] is None for r in wanted) or not (tiers["static"] or tiers["deep"]):
                continue  # a device that fails installs nothing: its other roles need not be timed
            if name == "both" and not all(_fits(sets.get(r), limits) for r in wanted):
                continue
            say(f"{len(timed)} timed queries: vectors{''.join(' + ' + r for r in wanted)}")
            sets[name] = _time_set(engine, timed, COLLECTION, **flags)
        reranker = engine.models.reranker()
        if reranker is not None:  # the pace the budget planned with (from the last warm-up on)
            result["rerankPairSeconds"] = reranker.pair_seconds
        roles, why = choose_roles(rates, cps, result["indexChunks"], sets, limits)
        cores = os.cpu_count() or 1
        for tier in ("static", "deep"):
            if not roles[tier]:
                why[tier] += busy_note(result["loadAverage"], cores)
        if static is None:
            why["static"] = f"unavailable: {engine.static_status().get('reason', 'not built')}"
        for role, reason in result["unloaded"].items():
            why[role] = f"did not load: {reason}"
        result.update(sets=sets, roles=roles, reasons=why, passed=roles["static"] or roles["deep"])
        chosen = "both" if roles["expand"] and roles["rerank"] else next(
            (r for r in ("rerank", "expand") if roles[r]), "vectors" if roles["deep"] else "static")
        result["querySeconds"] = sets.get(chosen, {}).get("seconds")
        return result
    finally:
        engine.close()


def _static_rates(engine: Engine, report: dict[str, Any] | None) -> StaticRates | None:
    model = engine.models.static()
    if report is None or model is None:
        return None
    return StaticRates(chunks=report["embedded"], seconds=report["seconds"], distilled=report["distilled"],
                       distill_seconds=report["distill_seconds"], n_vocab=model.rows.n_vocab)


def _rate(chunks: int, seconds: float) -> float:
    return round(chunks / seconds, 2) if seconds > 0 and chunks else 0.0


def _load_models(engine: Engine) -> dict[str, Any]:
    """Each role's model, loaded now (None: it will not load), so no timed step pays for a load."""
    loaded = {"embed": engine.models.embedder(), "rerank": engine.models.reranker(),
              "expand": engine.models.expander()}
    for handle in (m.handle for m in loaded.values() if m is not None):
        with handle.acquire():
            pass
    return loaded


def _warm_up(engine: Engine, query: str) -> None:
    """One untimed query with every model that loaded, within the budget, as a user's first."""
    from qmd_daemon.search.pipeline import SearchOptions

    engine.search(query, [COLLECTION], limit=10, options=SearchOptions(expand=True, rerank=True))


def _switch_deep_off(config_file: Path) -> None:
    """`models: {deep: off}` in the temporary index, as the installer writes it when the deep
    pass fails: the next search builds the model set again with it (engine.models)."""
    from qmd_daemon.config import IndexConfig

    config = IndexConfig.load(config_file)
    config.set_models({"deep": "off"})
    config.save()


def models_without_rows(models_dir: Path, workdir: Path) -> Path:
    """The models folder as the benchmark's child sees it: each entry linked, except the static
    tier's distilled rows (models/static_table.py), so the static rate measured includes the
    distillation a fresh install pays and the throwaway index writes no rows into the user's
    folder. Where links cannot be made (Windows without the privilege): the folder itself."""
    from qmd_daemon.models.static_table import STATIC_DIR

    view = workdir / "models"
    try:
        view.mkdir()
        for entry in models_dir.resolve().iterdir() if models_dir.is_dir() else ():  # links from elsewhere
            if entry.name != STATIC_DIR:
                (view / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    except OSError:
        return models_dir
    return view


def _count_chunks(engine: Engine, repos: list[Path], say: Callable[[str], None]) -> int:
    """The chunks the user's repositories will have, from a lexical index of them (fast: no model)."""
    total = 0
    for number, repo in enumerate(repos, 1):
        say(f"counting the chunks of {repo}")
        name = f"qmd-bench-repo-{number}"
        engine.add_collection(repo, name)
        total += engine.update([name], progress=False)[0].chunks_added
    return total


def _fits(measured: dict[str, Any] | None, limits: dict[str, float]) -> bool:
    return measured is not None and not measured["cut"] and measured["seconds"] <= limits["maxQuerySeconds"]


def decision_line(summary: dict[str, Any]) -> str:
    """One line: what Auto chose and why (the installer prints and records it)."""
    rows = summary["devices"]
    row = next((r for r in rows if r["passed"]), rows[-1] if rows else {})
    if not row.get("roles"):
        return f"no device could run the {summary['profile']} embedder ({row.get('error', 'no device')})"
    names = {"static": "static vectors", "deep": "deep vectors", "expand": "expansion", "rerank": "reranker"}
    return f"{summary['profile']} on {row['device']}: " + "; ".join(
        f"{names[r]} {'on' if row['roles'][r] else 'off'} ({row['reasons'][r]})" for r in names
    )


CHILD_GRACE_S = 10.0


def _stop_child(proc: subprocess.Popen[str]) -> None:
    """Ctrl-C reached the child as well (one foreground group) and the installer kills this process
    0.25 s later: the child removes its folder itself, so it is given time to, not killed mid-way
    (that left the temporary index in TMPDIR whenever this process got to the kill and no further)."""
    for ask in (None, proc.terminate, proc.kill):
        if ask is not None:
            ask()
        try:
            proc.wait(timeout=CHILD_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def _failed(device: str, profile: str, error: str) -> dict[str, Any]:
    return {"device": device, "profile": profile, "querySeconds": None, "chunksPerSecond": None,
            "passed": False, "error": error}


def _child(
    device: str,
    profile: str,
    fixtures: Path,
    timeout: float,
    echo: Callable[[str], None] | None,
    index_chunks: int | None = None,
    repos: list[Path] | None = None,
) -> dict[str, Any]:
    """Measure one device in a child process, echoing its step lines as they come."""
    workdir = Path(tempfile.mkdtemp(prefix="qmd-bench-"))
    env = dict(os.environ, QMD_MODELS_DIR=str(models_without_rows(Settings.from_env().models_dir, workdir)))
    if device == "cpu":
        env["QMD_FORCE_CPU"] = "1"
    else:
        env.pop("QMD_FORCE_CPU", None)
        env["QMD_LLAMA_GPU"] = "1"
    cmd = [
        sys.executable,
        "-m",
        "qmd_daemon.setup.bench",
        "--child",
        device,
        "--profile",
        profile,
        "--fixtures",
        str(fixtures),
        "--workdir",
        str(workdir),
    ] + (["--index-chunks", str(index_chunks)] if index_chunks else [])
    for repo in repos or []:
        cmd += ["--repo", str(repo)]
    expired = threading.Event()
    lines = []
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)

        def expire() -> None:
            expired.set()
            proc.kill()

        timer = threading.Timer(timeout, expire)
        timer.start()
        try:
            for line in proc.stdout or ():  # the result is the JSON line; the others are steps
                if line.startswith("{"):
                    lines.append(line)
                elif echo:
                    echo(f"  {line.rstrip()}")
            proc.wait()
        finally:  # Ctrl-C included: the child first, or it writes into the folder being removed
            timer.cancel()
            _stop_child(proc)
            shutil.rmtree(workdir, ignore_errors=True)
        stderr.seek(0)
        tail = (stderr.read().strip().splitlines() or ["no output"])[-1]
    if expired.is_set():
        return _failed(device, profile, f"timed out after {timeout:g} s")
    if proc.returncode != 0 or not lines:
        return _failed(device, profile, f"benchmark failed: {tail}")
    return json.loads(lines[-1])


def available_devices() -> list[str]:
    from qmd_daemon.models.runtime import gpu_available

    return ["cpu"] if Settings.from_env().force_cpu or not gpu_available() else ["gpu", "cpu"]


def auto(
    profile: str = "qwen3",
    devices: list[str] | None = None,
    fixtures: Path | None = None,
    echo: Callable[[str], None] | None = None,
    index_chunks: int | None = None,
    repos: list[Path] | None = None,
) -> dict[str, Any]:
    """Benchmark devices in order until one passes; the summary the installer reads."""
    fixtures = fixtures_dir(fixtures)
    timeout = SetupSettings.from_env().benchmark_device_timeout
    results: list[dict[str, Any]] = []
    for device in devices or available_devices():
        if echo:
            echo(f"benchmark: {profile} models on {device} (limit {timeout:g} s)...")
        result = _child(device, profile, fixtures, timeout, echo, index_chunks, repos)
        results.append(result)
        if echo:
            error = {"error": result["error"]} if result.get("error") else {}
            echo("  " + json.dumps({**_row(result), **error}))
        if result["passed"]:
            break
    passing = next((r for r in results if r["passed"]), None)
    summary = {
        "profile": profile,
        "passed": passing is not None,
        "device": passing["device"] if passing else None,
        "roles": passing["roles"] if passing else None,
        "devices": results,
        "rows": [_row(r) for r in results],
        "thresholds": thresholds(),
    }
    summary["decision"] = decision_line(summary)
    return summary


def _row(result: dict[str, Any]) -> dict[str, Any]:
    return {k: result.get(k) for k in ROW_KEYS}


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m qmd_daemon.setup.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--child", choices=["gpu", "cpu"], help=argparse.SUPPRESS)
    ap.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--profile", default="qwen3", choices=["qwen3", "small"])
    ap.add_argument("--device", action="append", choices=["gpu", "cpu"])
    ap.add_argument("--fixtures", type=Path)
    ap.add_argument("--index-chunks", type=int, help="chunks of the index to embed (default: assume 20,000)")
    ap.add_argument("--repo", type=Path, action="append", help="count the chunks of this repository")
    args = ap.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.child:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))  # cleans up, as Ctrl-C does
        try:
            out = measure_device(
                args.child, args.profile, fixtures_dir(args.fixtures), args.workdir,
                say=lambda line: print(line, flush=True), index_chunks=args.index_chunks, repos=args.repo,
            )
        except Exception as exc:  # one line for the parent's summary
            out = _failed(args.child, args.profile, f"{type(exc).__name__}: {exc}")
        finally:  # here too: on Ctrl-C the installer kills the parent 0.25 s later (subprocess.run)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not stop the clean-up
            shutil.rmtree(args.workdir, ignore_errors=True)
        print(json.dumps(out), flush=True)
        return 0
    summary = auto(args.profile, args.device, args.fixtures, echo=lambda s: print(s, file=sys.stderr),
                   index_chunks=args.index_chunks, repos=args.repo)
    print(json.dumps(summary, indent=2))
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
