"""The daemon's embed job while a terminal's `qmd-daemon embed` holds the embedding lock: it failed
(daemon.log said `embed ... failed`, qmd-warm logged a failure) although the other run embeds the
same chunks. It now skips and says so; `status` names the run embedding now. Real engine, real job
queue, the lock held by another process."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from qmd_daemon.daemon.jobs import JobQueue
from qmd_daemon.engine import Engine
from tests.conftest import MODELS_DIR, run_cli, write_tree

_HOLD = (
    "import sys; from pathlib import Path; from qmd_daemon.vectorize import embed_lock\n"
    "with embed_lock(Path(sys.argv[1])):\n    print('held', flush=True); sys.stdin.read()\n"
)


async def test_an_embed_job_skips_while_another_process_embeds(
    small_engine: Engine, home: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tree = write_tree(tmp_path / "tree", {"a.py": "def walrus():\n    return 1\n"})
    small_engine.add_collection(tree, "tree")
    small_engine.update(["tree"], progress=False)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(small_engine.embed_lock_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    queue = JobQueue(small_engine, auto_embed=False)
    queue.start()
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert small_engine.status()["vectors"]["running"] == holder.pid
        status = run_cli("status", env_home=home, QMD_MODELS_DIR=str(MODELS_DIR), check=True).stdout
        assert f"  embedding now: `qmd-daemon embed` (pid {holder.pid})" in status.splitlines()
        with caplog.at_level(logging.INFO, logger="qmd_daemon.jobs"):
            job = queue.submit("embed", ["tree"])
            assert await job.wait(120)  # a ceiling
        assert job.state == "done", job.error
        why = f"another `embed` is running on this index; it will finish the work (pid {holder.pid})"
        assert job.result["skipped"] == why
        assert "embed ('tree',) skipped in" in caplog.text and why in caplog.text
    finally:
        assert await queue.close()
        holder.communicate("")
    assert small_engine.status()["vectors"]["running"] is None
