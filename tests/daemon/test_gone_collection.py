"""A repository moved or deleted on disk while the daemon runs: the daemon's refresh of every
collection (`POST /refresh` without a target) stopped at its root, and no other collection after
it was refreshed; now it is reported and the others are refreshed. Nor is it searched beside
every repository any more (`includeByDefault`): its files are not there to open."""

from __future__ import annotations

import logging
from pathlib import Path

import aiohttp
import pytest

from qmd_daemon.daemon.server import Daemon
from tests.daemon.support import make_repo


async def test_a_refresh_of_every_collection_goes_on_past_a_gone_folder(
    daemon: Daemon, tmp_path: Path
) -> None:
    gone, kept = make_repo(tmp_path / "gone"), make_repo(tmp_path / "kept")
    daemon.reader.add_collection(gone, include_by_default=True)  # searched with every repository
    daemon.reader.add_collection(kept)
    gone.rename(tmp_path / "moved-away")
    (kept / "src" / "fresh.py").write_text("def quokka_after_the_move():\n    pass\n")
    headers = {"Authorization": f"Bearer {daemon.token}"}
    base = f"http://127.0.0.1:{daemon.port}"
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.post(f"{base}/refresh", json={"wait": 60}) as resp:
            (job,) = (await resp.json())["jobs"]
        assert job["state"] == "done", job
        reports = {r["collection"]: r for r in job["result"]["reports"]}
        assert "does not exist (moved or deleted?)" in reports["repo-gone"]["error"]
        assert reports["repo-kept"]["error"] is None and reports["repo-kept"]["added"] == 4
        body = {"query": "quokka_after_the_move", "path": str(kept)}
        async with http.post(f"{base}/search", json=body) as resp:
            answer = await resp.json()
    assert answer["hits"][0]["path"] == "src/fresh.py"
    # the gone folder's index is kept, but its hits would name files that are not there
    assert answer["collections"] == ["repo-kept"]


async def test_daemon_log_says_why_a_job_failed(
    daemon: Daemon, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`refresh ('repo-gone',) failed in 0.01s` named no reason: daemon.log is where a user looks."""
    gone = make_repo(tmp_path / "gone")
    daemon.reader.add_collection(gone)
    gone.rename(tmp_path / "moved-away")
    caplog.set_level(logging.INFO, logger="qmd_daemon.jobs")
    job = daemon.jobs.submit("refresh", ["repo-gone"])
    await job.wait(60)
    assert job.state == "failed"
    (line,) = [r.getMessage() for r in caplog.records if "failed in" in r.getMessage()]
    assert "repo-gone" in line and "does not exist (moved or deleted?)" in line
