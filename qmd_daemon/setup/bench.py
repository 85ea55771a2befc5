"""`qmd-daemon bench --auto`: which local models can this machine run, role by role?

Per device (GPU first when llama.cpp can offload, then CPU), in a child process with a time limit
(`QMD_BENCHMARK_DEVICE_TIMEOUT`, 600 s; a timeout fails that device), on `benchmark_fixtures/` in a
temporary index removed afterwards:

1. load (warm) the models; a role that will not load is off, 2. embed every chunk (chunks per
second), 3. one untimed warm-up query, 4. three timed queries per set of roles, each as search
really runs it (the pipeline's own latency budget and rerank depth, `SearchOptions()`), with the
result cache emptied between sets: vectors, vectors + expansion, vectors + reranking, then both.

The embedder is on when the index's chunks (those of `--repo` folders, indexed lexically into the
temporary index to count them; else `--index-chunks`; else an assumed 20,000) embed within
`QMD_BENCHMARK_MAX_EMBED_MINUTES` (60) at the measured rate and a vector query takes <=
`QMD_BENCHMARK_MAX_QUERY_SECONDS` (5); expansion and reranking are each on when the budget did not
cut them and the query stays within that time; both on only when, together, neither was cut. A
device passes when the embedder is on (without it Auto installs nothing). Every query is bounded
by the budget, so a slow CPU ends in seconds per query, not minutes.
Output (`--json`): `{"profile", "passed", "device", "roles", "decision", "devices": [{device,
querySeconds, chunksPerSecond, embedMinutes, roles, sets, reasons, passed, ...}]}`.
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
from dataclasses import replace
from pathlib import Path
from typing import Any

from qmd_daemon.settings import Settings, SetupSettings
from qmd_daemon.setup.paths import REPO_ROOT

DEFAULT_FIXTURES = REPO_ROOT / "benchmark_fixtures"
COLLECTION = "qmd-bench-fixtures"


ASSUMED_INDEX_CHUNKS = 20_000  # a mid-size repository, when the caller does not say
ROLE_SETS: dict[str, dict[str, bool]] = {  # measured in this order; "both" only when each passed
    "vectors": {"expand": False, "rerank": False},
    "expand": {"expand": True, "rerank": False},
    "rerank": {"expand": False, "rerank": True},
    "both": {"expand": True, "rerank": True},
}


def thresholds() -> dict[str, float]:
    knobs = SetupSettings.from_env()
    return {
        "maxQuerySeconds": knobs.benchmark_max_query_seconds,
        "maxEmbedMinutes": knobs.benchmark_max_embed_minutes,
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


def choose_roles(
    chunks_per_second: float, index_chunks: int, sets: dict[str, dict[str, Any]], limits: dict[str, float]
) -> tuple[dict[str, bool], dict[str, str]]:
    """Per role on/off and the reason, from the measured rate and the timed sets (see the module)."""
    max_q = limits["maxQuerySeconds"]
    minutes = index_chunks / chunks_per_second / 60 if chunks_per_second > 0 else float("inf")
    vectors = sets.get("vectors") or {}
    embed = minutes <= limits["maxEmbedMinutes"] and vectors.get("seconds", float("inf")) <= max_q
    reasons = {
        "embed": f"{index_chunks:,} chunks embed in {minutes:,.0f} min at {chunks_per_second:g} chunks/s "
        f"(limit {limits['maxEmbedMinutes']:g} min); a vector query {vectors.get('seconds')} s "
        f"(limit {max_q:g} s)"
    }
    roles = {"embed": embed, "expand": False, "rerank": False}
    for role in ("expand", "rerank"):
        measured = sets.get(role)
        if not embed or not measured:
            reasons[role] = "not measured (no embedder)" if not embed else "the model did not load"
            continue
        roles[role] = not measured["cut"] and measured["seconds"] <= max_q
        cut = measured["cut"]
        reasons[role] = f"query {measured['seconds']} s, " + (
            f"cut by the latency budget ({cut})" if cut else "ran in full within the budget"
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
    from qmd_daemon.search.pipeline import SearchOptions

    queries = json.loads((fixtures / "queries.json").read_text(encoding="utf-8"))
    limits = thresholds()
    settings = replace(
        Settings.from_env(),
        config_dir=workdir / "config",
        index_path=workdir / "index.sqlite",
        state_dir=workdir / "state",
    )
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
        loaded = {"embed": engine.models.embedder(), "rerank": engine.models.reranker(),
                  "expand": engine.models.expander()}
        for handle in (m.handle for m in loaded.values() if m is not None):
            with handle.acquire():
                pass
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
        say(f"embedding {update.chunks_added} chunks of {update.files} files")
        t0 = time.perf_counter()
        report = engine.embed([COLLECTION], progress=False).as_dict()
        embed_s = time.perf_counter() - t0
        result["loadAverage"] = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
        chunks = int(report.get("embedded") or 0) + int(report.get("copied") or 0)
        result["chunks"] = chunks
        result["files"] = update.files
        cps = round(chunks / embed_s, 2) if embed_s > 0 and chunks else 0.0
        result["chunksPerSecond"] = cps
        result["embedMinutes"] = round(result["indexChunks"] / cps / 60, 1) if cps else None
        say("a warm-up query (every model that loaded, within the budget, as a first question)")
        first = SearchOptions(expand=True, rerank=True)
        engine.search(queries["warmup"], [COLLECTION], limit=10, options=first)
        reranker = engine.models.reranker()
        if reranker is not None:  # the pace the budget plans with from here on
            result["rerankPairSeconds"] = reranker.pair_seconds
        timed = queries["timed"][:3]
        sets: dict[str, dict[str, Any]] = {}
        for name, flags in ROLE_SETS.items():
            wanted = [r for r, on in flags.items() if on]
            if any(loaded[r] is None for r in wanted):
                continue
            minutes = result["embedMinutes"]
            if wanted and (minutes is None or minutes > limits["maxEmbedMinutes"]):
                break  # no embedder, no models: the other roles need not be timed
            if name == "both" and not all(_fits(sets.get(r), limits) for r in wanted):
                continue
            say(f"{len(timed)} timed queries: vectors{''.join(' + ' + r for r in wanted)}")
            sets[name] = _time_set(engine, timed, COLLECTION, **flags)
        roles, why = choose_roles(cps, result["indexChunks"], sets, limits)
        if not roles["embed"]:
            why["embed"] += busy_note(result["loadAverage"], os.cpu_count() or 1)
        for role, reason in result["unloaded"].items():
            why[role] = f"did not load: {reason}"
        result.update(sets=sets, roles=roles, reasons=why, passed=roles["embed"])
        chosen = "both" if roles["expand"] and roles["rerank"] else next(
            (r for r in ("rerank", "expand") if roles[r]), "vectors")
        result["querySeconds"] = sets.get(chosen, {}).get("seconds")
        return result
    finally:
        engine.close()


def _count_chunks(engine: Any, repos: list[Path], say: Callable[[str], None]) -> int:
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
    names = {"embed": "embedder", "expand": "expansion", "rerank": "reranker"}
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
    env = dict(os.environ)
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
            echo(
                "  "
                + json.dumps(
                    {
                        k: result.get(k)
                        for k in ("device", "querySeconds", "chunksPerSecond", "embedMinutes", "roles",
                                  "passed", "error")
                        if k != "error" or result.get(k)
                    }
                )
            )
        if result["passed"]:
            break
    passing = next((r for r in results if r["passed"]), None)
    summary = {
        "profile": profile,
        "passed": passing is not None,
        "device": passing["device"] if passing else None,
        "roles": passing["roles"] if passing else None,
        "devices": results,
        "thresholds": thresholds(),
    }
    summary["decision"] = decision_line(summary)
    return summary


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
