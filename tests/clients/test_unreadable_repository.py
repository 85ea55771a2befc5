"""A search in a repository this user can no longer read: the daemon and the in-process search
(`python -m qmd_daemon.daemon search`, what `ai-search --no-daemon` runs) refuse it with one line.

Tests run as root here, and root reads whatever the modes say, so the daemon, the client and the
in-process search run as `nobody` (setpriv) in a world-readable temp folder: real permission
errors. Each is started by setpriv itself: a child nobody starts may not reach this Python (it
lies under root's private home here), so the client finds the daemon running, spawning nothing."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

from qmd_daemon.config import CollectionConfig
from qmd_daemon.daemon import api
from qmd_daemon.engine import Engine
from tests.conftest import SAMPLE_PY, as_another_user, write_tree
from tests.daemon.support import CLIENTS, env_for, state_of, stop_daemon, wait_for


def _env(home: Path) -> dict[str, str]:
    return env_for(home, HOME=str(home))


def _as_user(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*as_another_user(), sys.executable, *argv], cwd=home, env=_env(home),
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_daemon_and_the_in_process_search_refuse_an_unreadable_repository_alike(shared_tmp: Path) -> None:
    # the daemon watched the root, so the client left freshness to it: it answered from the index
    # as it was, exit 0 and no word, while --no-daemon said it cannot read the folder
    home, repo = shared_tmp / "home", write_tree(shared_tmp / "repo", {"src/client.py": SAMPLE_PY})
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        for path in (home, repo, *repo.rglob("*")):
            os.chown(path, nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)
    serve = [*as_another_user(), sys.executable, "-m", "qmd_daemon.daemon", "serve"]
    quiet = subprocess.DEVNULL
    daemon = subprocess.Popen(serve, cwd=home, env=_env(home), stdout=quiet, stderr=quiet)
    search = (str(CLIENTS / "ai_search.py"), "--repo", str(repo), "parse cookie header")
    try:
        wait_for(lambda: state_of(home), timeout=60)
        for _ in range(2):  # the second call finds the daemon watching the root
            first = _as_user(home, *search)
            assert first.returncode == 0 and "client.py" in first.stdout, first.stderr
        stamps = [json.loads(p.read_text()) for p in (home / "state" / "repos").glob("*.json")]
        assert [stamp["watched"] for stamp in stamps] == [True]
        repo.chmod(0)

        message = f"cannot read {repo} (permission denied), so nothing in it was read"
        for by_name in ((), ("-c", "repo-repo")):  # in the repository, or naming its collection
            proc = _as_user(home, *search, *by_name)
            assert (proc.returncode, proc.stdout) == (2, ""), by_name
            assert proc.stderr.splitlines() == [f"ai-search: error: {message}"]
        targets = ({"path": str(repo), "refresh": "auto"}, {"collections": ["repo-repo"], "refresh": True})
        for target in targets:
            request = {"query": "parse cookie header", "wait": 60, **target}
            alone = _as_user(home, "-m", "qmd_daemon.daemon", "search", "--request", json.dumps(request))
            assert alone.returncode == 2, alone.stderr
            assert json.loads(alone.stdout) == {"error": {"code": "bad_request", "message": message}}
    finally:
        repo.chmod(0o755)
        stop_daemon(home)
        daemon.wait(timeout=30)


def test_a_folder_that_is_gone_is_not_called_unreadable(engine: Engine, tmp_path: Path) -> None:
    # os.access answers False for a path that is not there: the check must leave a moved or
    # deleted collection to what says so, not call it a permission problem
    gone = CollectionConfig(name="repo-gone", path=tmp_path / "gone")
    assert api.search_scope(engine, None, gone) == ["repo-gone"]
