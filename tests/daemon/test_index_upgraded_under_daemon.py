"""A daemon whose index newer code upgraded while it ran (a `pip install -U`, then the new CLI or
an in-process fallback opened the index) cannot write to it any more (store/schema.py refuses
older writers), so at its first refused write it stops: the next client call starts the new code.
Real processes throughout; the newer code is this code with one more schema step."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import upgrade_by_newer_code
from tests.daemon.support import make_repo, pid_running, run_client, state_of, wait_for


def test_the_daemon_stops_once_newer_code_upgraded_its_index(daemon_home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    first = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
    assert first.returncode == 0 and json.loads(first.stdout), first.stderr
    daemon = state_of(daemon_home)
    assert daemon is not None and pid_running(daemon["pid"])
    index = daemon_home / "cache" / "index.sqlite"
    upgrade_by_newer_code(index)
    (repo / "src" / "fresh.py").write_text("def brand_new_helper_function():\n    return 42\n")
    run_client("ai_search.py", "brand_new_helper_function", "--json", home=daemon_home, cwd=repo)
    wait_for(lambda: not pid_running(daemon["pid"]), timeout=30)
    log = (daemon_home / "state" / "logs" / "daemon.log").read_text()
    assert "upgraded to schema" in log and "by a newer qmd-daemon" in log
