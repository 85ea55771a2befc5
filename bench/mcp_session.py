"""An MCP-only session, timed: what `qmd-daemon mcp` costs and whether it sees an edit.

One run, on a fresh QMD_DAEMON_HOME, the `small` profile: a copy of qmd-daemon's own source as a git
repository, indexed and embedded first (`collection add`, `embed`), then one `qmd-daemon mcp` server
(the SDK's stdio client, as an agent's) asked:

  first     the first search (a daemon started on the way, or models loaded in the server)
  warm      the median of 5 further searches
  edit      a function appended to a file, then searched for by its name: found or not
  rss       the server process's VmRSS after the searches, and whether it maps a model (.gguf)

    nice -n 10 python bench/mcp_session.py [--models-dir .test-cache/models] [--json]

Run it on two commits to compare (the server's code is what differs). Any daemon it started is
stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def server_pid(parent: int) -> int | None:
    """The `qmd-daemon mcp` child of `parent` (stdio_client starts it), from /proc."""
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if stat.rsplit(")", 1)[-1].split()[1] == str(parent) and b"mcp" in cmdline:
            return int(entry.name)
    return None


def rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024


async def _session(env: dict[str, str], repo: Path) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    qmd = Path(sys.executable).parent / "qmd-daemon"
    params = StdioServerParameters(command=str(qmd), args=["mcp"], env=env, cwd=repo)
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def search(query: str) -> tuple[float, list[dict[str, Any]]]:
            started = time.perf_counter()
            result = await session.call_tool("search", {"query": query, "limit": 5})
            took = time.perf_counter() - started
            text = "".join(c.text for c in result.content if c.type == "text")
            if result.is_error:
                raise SystemExit(f"search failed: {text}")
            return took, json.loads(text)

        out["first_s"], _ = await search("how does the daemon decide when to exit after being idle")
        warm = [(await search(q))[0] for q in ("watch inotify budget", "rerank batches", "fts5 merge",
                                                 "calibrated score", "path filter patterns")]
        out["warm_median_s"] = statistics.median(warm)
        with (repo / "qmd_daemon" / "numeric.py").open("a", encoding="utf-8") as handle:
            handle.write("\n\ndef reticulate_splines_quickly(spline):\n    return spline * 2\n")
        took, hits = await search("reticulate_splines_quickly")
        out["edit_found"] = bool(hits) and "reticulate_splines_quickly" in hits[0]["snippet"]
        out["edit_s"] = took
        pid = server_pid(os.getpid())
        if pid is not None:
            out["server_rss_mib"] = round(rss_mib(pid), 1)
            out["server_maps_a_model"] = ".gguf" in Path(f"/proc/{pid}/maps").read_text()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models-dir", default=str(REPO / ".test-cache" / "models"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="qmd-mcp-bench-") as tmp:
        home, repo = Path(tmp) / "home", Path(tmp) / "qmd-copy"
        shutil.copytree(REPO / "qmd_daemon", repo / "qmd_daemon")
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        (home / "config").mkdir(parents=True)
        (home / "config" / "index.yml").write_text("models: {profile: small}\n")
        env = dict(os.environ, QMD_DAEMON_HOME=str(home), QMD_MODELS_DIR=args.models_dir, HF_HUB_OFFLINE="1")
        qmd = [sys.executable, "-c", "from qmd_daemon.cli import main; main()"]
        for step in (["collection", "add", str(repo)], ["embed"]):
            subprocess.run([*qmd, *step], env=env, check=True, capture_output=True)
        try:
            figures = asyncio.run(_session(env, repo))
        finally:
            subprocess.run([*qmd, "stop"], env=env, capture_output=True, check=False)
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:>22}: {round(value, 3) if isinstance(value, float) else value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
