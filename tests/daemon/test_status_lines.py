"""`qmd-daemon status` says what is true: the daemon's owed embed (a job skipped while another
process held the embedding lock) and a static tier no pass has pooled yet. Real daemon (in this
process, serving on a real port; the CLI runs in a thread so its loop answers), real CLI.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from qmd_daemon.daemon.server import Daemon
from qmd_daemon.daemon.state import LifetimeLock
from qmd_daemon.engine import Engine
from tests.conftest import MODELS_DIR, run_cli, write_tree
from tests.daemon.support import lock_held_elsewhere


def _tree(engine: Engine, tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree", {"a.py": "def walrus():\n    return 1\n", "b.py": "Y = 3\n"})
    engine.add_collection(tree, "tree")
    engine.update(["tree"], progress=False)


async def test_status_names_the_embed_the_daemon_owes(
    small_engine: Engine, home: Path, tmp_path: Path
) -> None:
    _tree(small_engine, tmp_path)
    lifetime = LifetimeLock(small_engine.settings.state_dir)  # what serve_forever holds around it
    assert lifetime.try_acquire()
    daemon = Daemon(small_engine.settings, watch=False, idle_minutes=30)
    await daemon.start()
    try:
        with lock_held_elsewhere(small_engine.embed_lock_path) as holder:
            job = daemon.jobs.submit("embed", ["tree"])
            assert await job.wait(120) and job.result["skipped"]  # a ceiling
            assert daemon.jobs.snapshot()["embed_retry"] is not None
            status = await asyncio.to_thread(
                run_cli, "status", env_home=home, check=True, QMD_MODELS_DIR=str(MODELS_DIR)
            )
        owed = [line for line in status.stdout.splitlines() if "embedding owed" in line]
        assert owed == [
            f"  embedding owed: the daemon skipped the deep pass of tree while pid {holder.pid} held its "
            "lock; it runs once that lets go (checked every 3 s)"
        ], status.stdout
    finally:
        await daemon.close()
        lifetime.release()


def test_status_says_the_static_tier_is_not_built_before_its_first_pass(
    small_engine: Engine, home: Path, tmp_path: Path
) -> None:
    """It said "0/2 chunks (lexical's candidates re-scored ...)" when nothing was re-scored."""
    _tree(small_engine, tmp_path)
    env = {"QMD_MODELS_DIR": str(MODELS_DIR)}
    before = run_cli("status", env_home=home, check=True, **env).stdout
    chunks = small_engine.status()["vectors"]["chunks"]
    assert chunks > 0
    assert (f"static vectors: not built yet, {chunks} chunks waiting (the daemon's embed job or "
            "`qmd-daemon embed` pools them)") in before.splitlines(), before
    assert "re-scored" not in before and "embedding owed" not in before
    run_cli("embed", env_home=home, check=True, **env)
    after = run_cli("status", env_home=home, check=True, **env).stdout
    assert f"static vectors: {chunks}/{chunks} chunks (lexical's candidates re-scored" in after, after
