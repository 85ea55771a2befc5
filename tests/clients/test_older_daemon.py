"""`pip install -U` while a daemon runs: the daemon keeps its old code in memory, and the new
client must not keep talking to it (its writes to the upgraded index are refused, so it could
never refresh again). Real processes: the older daemon is this code with its last schema step
taken away before it starts (the only daemon older than the code under test that can run here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from clients import _qmd_client
from qmd_daemon.store.schema import SCHEMA_VERSION
from tests.daemon.support import env_for, make_repo, pid_running, run_client, state_of, wait_for

_OLDER_DAEMON = """
import runpy, sys
from qmd_daemon.store import schema
del schema.MIGRATIONS[schema.SCHEMA_VERSION]
schema.SCHEMA_VERSION -= 1
sys.argv = ["qmd_daemon.daemon", "serve"]
runpy.run_module("qmd_daemon.daemon", run_name="__main__")
"""


def test_the_client_mirrors_the_schema_of_its_code() -> None:
    assert _qmd_client.INDEX_SCHEMA == SCHEMA_VERSION


def test_a_daemon_older_than_the_client_is_replaced(daemon_home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    older = subprocess.Popen(
        [sys.executable, "-c", _OLDER_DAEMON], env=env_for(daemon_home),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: (state_of(daemon_home) or {}).get("pid") == older.pid, timeout=60)
        assert state_of(daemon_home)["schema"] == SCHEMA_VERSION - 1
        proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        assert "restarting the daemon" in proc.stderr and "older code" in proc.stderr
        assert older.wait(timeout=30) == 0, "the older daemon is asked to stop, not killed"
        hits = json.loads(proc.stdout)
        assert hits and hits[0]["path"] == "src/client.py"
        state = state_of(daemon_home)
        assert state["schema"] == SCHEMA_VERSION and state["pid"] != older.pid and pid_running(state["pid"])
    finally:
        if older.poll() is None:
            older.kill()
            older.wait()
