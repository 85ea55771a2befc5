"""`qmd-daemon bench --auto`: is this machine fast enough for the local models?

Per device (GPU first when llama.cpp can offload, then CPU), in a child process with a time limit
(`QMD_BENCHMARK_DEVICE_TIMEOUT`, 600 s; a timeout fails that device), on `benchmark_fixtures/` in a
temporary index removed afterwards:

1. load (warm) the three models, 2. embed every chunk and time it (chunks per second),
3. run one untimed warm-up query, 4. time three full-pipeline queries (expansion, vector search,
rerank of 40; no latency budget) and take the median.

A device passes when the median <= `QMD_BENCHMARK_MAX_QUERY_SECONDS` (5) and embedding >=
`QMD_BENCHMARK_MIN_CHUNKS_PER_SECOND` (20). The first passing device ends the run.
Output (`--json`): `{"profile", "passed", "device", "devices": [{device, querySeconds,
chunksPerSecond, passed, ...}]}`.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
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


def thresholds() -> tuple[float, float]:
    knobs = SetupSettings.from_env()
    return knobs.benchmark_max_query_seconds, knobs.benchmark_min_chunks_per_second


def fixtures_dir(path: Path | None = None) -> Path:
    found = path or SetupSettings.from_env().benchmark_fixtures or DEFAULT_FIXTURES
    if not (found / "queries.json").is_file():
        raise FileNotFoundError(f"benchmark fixtures not found at {found} (need queries.json)")
    return found


def measure_device(
    device: str, profile: str, fixtures: Path, workdir: Path, say: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    """One device, in this process (the child side of `auto`); `say` gets a line per step, as the
    steps take minutes on a slow machine."""
    from qmd_daemon.config import IndexConfig
    from qmd_daemon.engine import Engine
    from qmd_daemon.search.pipeline import SearchOptions, SearchTrace

    queries = json.loads((fixtures / "queries.json").read_text(encoding="utf-8"))
    max_q, min_cps = thresholds()
    settings = replace(
        Settings.from_env(),
        config_dir=workdir / "config",
        index_path=workdir / "index.sqlite",
        state_dir=workdir / "state",
        log_dir=workdir / "state" / "logs",
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
    }
    # The whole pipeline, with no latency budget: the point is to see what it costs. Fewer
    # rerank candidates (QMD_BENCHMARK_RERANK_CANDIDATES) keep the installer tests short on 2 cores.
    rerank_count = SetupSettings.from_env().benchmark_rerank_candidates
    result["rerankCandidates"] = rerank_count
    try:
        say("loading the models")
        t0 = time.perf_counter()
        roles = {"embed": engine.models.embedder(), "rerank": engine.models.reranker(),
                 "expand": engine.models.expander()}
        missing = [r for r, m in roles.items() if m is None]
        if missing:
            reasons = engine.models.status()["roles"]
            result["error"] = "; ".join(f"{r}: {reasons[r].get('reason', 'unavailable')}" for r in missing)
            return result
        for handle in (m.handle for m in roles.values() if m is not None):  # all loaded (above)
            with handle.acquire():
                pass
        result["device_used"] = engine.models.device
        result["warmSeconds"] = round(time.perf_counter() - t0, 3)
        engine.add_collection(fixtures, COLLECTION)
        update = engine.update([COLLECTION], progress=False)[0]
        say(f"embedding {update.chunks_added} chunks of {update.files} files")
        t0 = time.perf_counter()
        report = engine.embed([COLLECTION], progress=False).as_dict()
        embed_s = time.perf_counter() - t0
        chunks = int(report.get("embedded") or 0) + int(report.get("copied") or 0)
        result["chunks"] = chunks
        result["files"] = update.files
        result["chunksPerSecond"] = round(chunks / embed_s, 2) if embed_s > 0 and chunks else 0.0
        options = SearchOptions(expand=True, rerank=True, rerank_candidates=rerank_count, budget_ms=None)
        say(f"a warm-up query (expansion, vectors, rerank of {rerank_count})")
        engine.search(queries["warmup"], [COLLECTION], limit=10, options=options)
        times, traces = [], []
        timed = queries["timed"][:3]
        for number, query in enumerate(timed, 1):
            say(f"timed query {number}/{len(timed)}")
            trace = SearchTrace()
            t0 = time.perf_counter()
            engine.search(query, [COLLECTION], limit=10, options=options, trace=trace)
            times.append(time.perf_counter() - t0)
            traces.append({"expanded": len(trace.expanded), "reranked": trace.reranked})
        result["querySeconds"] = round(statistics.median(times), 3)
        result["queries"] = traces
        result["passed"] = result["querySeconds"] <= max_q and result["chunksPerSecond"] >= min_cps
        return result
    finally:
        engine.close()


def _failed(device: str, profile: str, error: str) -> dict[str, Any]:
    return {"device": device, "profile": profile, "querySeconds": None, "chunksPerSecond": None,
            "passed": False, "error": error}


def _child(
    device: str, profile: str, fixtures: Path, timeout: float, echo: Callable[[str], None] | None
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
    ]
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
        finally:
            timer.cancel()
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
    profile: str = "qwen3", devices: list[str] | None = None, fixtures: Path | None = None, echo=None
) -> dict[str, Any]:
    """Benchmark devices in order until one passes; the summary the installer reads."""
    fixtures = fixtures_dir(fixtures)
    timeout = SetupSettings.from_env().benchmark_device_timeout
    results: list[dict[str, Any]] = []
    for device in devices or available_devices():
        if echo:
            echo(f"benchmark: {profile} models on {device} (limit {timeout:g} s)...")
        result = _child(device, profile, fixtures, timeout, echo)
        results.append(result)
        if echo:
            echo(
                "  "
                + json.dumps(
                    {
                        k: result.get(k)
                        for k in ("device", "querySeconds", "chunksPerSecond", "passed", "error")
                        if k != "error" or result.get(k)
                    }
                )
            )
        if result["passed"]:
            break
    passing = next((r["device"] for r in results if r["passed"]), None)
    max_q, min_cps = thresholds()
    return {
        "profile": profile,
        "passed": passing is not None,
        "device": passing,
        "devices": results,
        "thresholds": {"maxQuerySeconds": max_q, "minChunksPerSecond": min_cps},
    }


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m qmd_daemon.setup.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--child", choices=["gpu", "cpu"], help=argparse.SUPPRESS)
    ap.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--profile", default="qwen3", choices=["qwen3", "small"])
    ap.add_argument("--device", action="append", choices=["gpu", "cpu"])
    ap.add_argument("--fixtures", type=Path)
    args = ap.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.child:
        try:
            out = measure_device(
                args.child, args.profile, fixtures_dir(args.fixtures), args.workdir,
                say=lambda line: print(line, flush=True),
            )
        except Exception as exc:  # one line for the parent's summary
            out = {
                "device": args.child,
                "profile": args.profile,
                "querySeconds": None,
                "chunksPerSecond": None,
                "passed": False,
                "error": f"{type(exc).__name__}: {exc}",
            }
        print(json.dumps(out), flush=True)
        return 0
    summary = auto(args.profile, args.device, args.fixtures, echo=lambda s: print(s, file=sys.stderr))
    print(json.dumps(summary, indent=2))
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
