"""Folders this user cannot enter (EACCES) fail for themselves only: a collection root behind one
does not stop the daemon, an index behind one is one line from `serve`.

Tests run as root here, and root reads whatever the modes say, so the daemon and the clients run
as `nobody` (setpriv) in a world-readable temp folder: real permission errors. Each process is
started by setpriv itself (a child nobody starts may not reach this Python: it lies under root's
private home here)."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import as_another_user, python_as_another_user, write_tree
from tests.daemon.support import CLIENTS, env_for, state_of, stop_daemon

REGISTER = """
import sys
from pathlib import Path
from qmd_daemon.engine import Engine
engine = Engine()
for folder in sys.argv[2:]:
    engine.add_collection(Path(folder))
engine.update()
engine.close()
Path(sys.argv[1]).chmod(0)
"""


def _env(home: Path, **extra: str) -> dict[str, str]:
    return env_for(home, HOME=str(home), **extra)


def _as_user(home: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*as_another_user(), sys.executable, *argv], cwd=cwd or home, env=_env(home),
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def _give_to_nobody(*folders: Path) -> None:
    if os.geteuid() == 0:  # the child, as nobody, locks the folder itself
        nobody = pwd.getpwnam("nobody")
        for folder in folders:
            for path in (folder, *folder.rglob("*")):
                os.chown(path, nobody.pw_uid, nobody.pw_gid, follow_symlinks=False)


def test_a_root_behind_an_unreadable_folder_leaves_the_daemon_serving_the_others(shared_tmp: Path) -> None:
    # the watcher asked each root is_dir(), which raises EACCES for a root whose parent this
    # user cannot enter: the daemon died at its start, and every client fell back to in-process
    outer = shared_tmp / "outer"
    inner = write_tree(outer / "inner", {"a.py": "def other_word():\n    return 1\n"})
    fine = write_tree(shared_tmp / "fine", {"ok.py": "def fine_word():\n    return 1\n"})
    home = shared_tmp / "home"
    _give_to_nobody(outer, fine)
    registered = python_as_another_user(home, "-c", REGISTER, str(outer), str(inner), str(fine))
    assert registered.returncode == 0, registered.stderr[-2000:]

    serve = [*as_another_user(), sys.executable, "-m", "qmd_daemon.daemon", "serve"]
    daemon = subprocess.Popen(serve, cwd=home, env=_env(home), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while state_of(home) is None and daemon.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert daemon.poll() is None, daemon.communicate(timeout=10)[1][-2000:]
        assert state_of(home) is not None

        found = _as_user(home, str(CLIENTS / "ai_search.py"), "--json", "fine_word", cwd=fine)
        assert found.returncode == 0 and '"ok.py"' in found.stdout, found.stderr
        refused = _as_user(home, str(CLIENTS / "ai_search.py"), "-c", "inner", "fine_word", cwd=fine)
        message = f"cannot read {inner} (permission denied), so nothing in it was read"
        assert (refused.returncode, refused.stderr.splitlines()) == (2, [f"ai-search: error: {message}"])
        assert daemon.poll() is None, "the daemon still serves"
    finally:
        outer.chmod(0o755)
        stop_daemon(home)
        daemon.wait(timeout=30)


def test_an_index_behind_an_unreadable_folder_is_one_line_from_serve(shared_tmp: Path) -> None:
    # what the clients start (`python -m qmd_daemon.daemon serve`) printed a traceback into the
    # daemon's log where `qmd-daemon serve` says one line
    home, closed = shared_tmp / "home", shared_tmp / "closed"
    index = closed / "index.sqlite"
    for folder, mode in ((home, 0o777), (closed, 0)):
        folder.mkdir()
        folder.chmod(mode)  # past the umask
    proc = subprocess.run(
        [*as_another_user(), sys.executable, "-m", "qmd_daemon.daemon", "serve"], cwd=home,
        env=_env(home, QMD_INDEX_PATH=str(index)), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1:] == [f"qmd-daemon: error: Permission denied: {index}"]
    assert "Traceback" not in proc.stderr
