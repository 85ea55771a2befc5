"""`pip install -U` while a daemon runs: the daemon keeps its old code in memory, and the new
client must not keep talking to it (its writes to the upgraded index are refused, so it could
never refresh again; with the same schema, it kept serving the old code's behaviour until it
idled out). Real processes: the older daemon is this code with its last schema step taken away
before it starts (the only daemon older than the code under test that can run here), or this code
stamped with a package file the test rewrites as pip would."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import qmd_daemon
from clients import _qmd_client
from qmd_daemon.store.schema import SCHEMA_VERSION
from tests.daemon.support import (
    daemon_running,
    make_repo,
    pid_running,
    run_client,
    state_of,
    stop_daemon,
)

_OLDER_DAEMON = """
import runpy, sys
from qmd_daemon.store import schema
del schema.MIGRATIONS[schema.SCHEMA_VERSION]
schema.SCHEMA_VERSION -= 1
sys.argv = ["qmd_daemon.daemon", "serve"]
runpy.run_module("qmd_daemon.daemon", run_name="__main__")
"""


# this code, its state file naming the package file argv[1] as the one its code was loaded from
_STAMPED_DAEMON = """
import runpy, sys
import qmd_daemon
qmd_daemon.__file__ = sys.argv[1]
sys.argv = ["qmd_daemon.daemon", "serve"]
runpy.run_module("qmd_daemon.daemon", run_name="__main__")
"""


# this code, its state file naming no package file: a version from before the stamp
_UNSTAMPED_DAEMON = """
import runpy, sys
from qmd_daemon.daemon import state
state.LOADED_CODE = None
sys.argv = ["qmd_daemon.daemon", "serve"]
runpy.run_module("qmd_daemon.daemon", run_name="__main__")
"""


def _python_serving(tmp_path: Path, script: str) -> Path:
    """A QMD_DAEMON_PYTHON of an older install: its `serve` runs SCRIPT, anything else this Python."""
    code = tmp_path / "older_daemon.py"
    code.write_text(script)
    python = tmp_path / "older-python"
    python.write_text(
        "#!/bin/sh\n"
        f'[ "$*" = "-m qmd_daemon.daemon serve" ] && exec {sys.executable} {code}\n'
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    return python


def test_the_client_mirrors_the_schema_of_its_code() -> None:
    assert _qmd_client.INDEX_SCHEMA == SCHEMA_VERSION


def test_a_daemon_older_than_the_client_is_replaced(daemon_home: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    with daemon_running(daemon_home, _OLDER_DAEMON) as older:
        assert state_of(daemon_home)["schema"] == SCHEMA_VERSION - 1
        proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        assert "restarting the daemon" in proc.stderr and "older code" in proc.stderr
        assert older.wait(timeout=30) == 0, "the older daemon is asked to stop, not killed"
        hits = json.loads(proc.stdout)
        assert hits and hits[0]["path"] == "src/client.py"
        state = state_of(daemon_home)
        assert state["schema"] == SCHEMA_VERSION and state["pid"] != older.pid and pid_running(state["pid"])


def test_an_older_daemon_that_qmd_daemon_python_starts_is_started_once_and_kept(
    daemon_home: Path, tmp_path: Path
) -> None:
    # QMD_DAEMON_PYTHON names an older install: restarting its daemon starts the same code, and
    # the client used to stop and start it again on every call (session 8's known defect)
    python = _python_serving(tmp_path, _OLDER_DAEMON)
    repo = make_repo(tmp_path / "proj")
    pids, errors = [], []
    for _ in range(3):
        proc = run_client(
            "ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo,
            QMD_DAEMON_PYTHON=str(python),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)[0]["path"] == "src/client.py"
        pids.append(state_of(daemon_home)["pid"])
        errors.append(proc.stderr)
    assert len(set(pids)) == 1, f"restarted on every call: {errors}"
    assert state_of(daemon_home)["schema"] == SCHEMA_VERSION - 1
    for stderr in errors:  # each call says why, in one line
        assert "restarting the daemon" not in stderr
        assert f"{python} (QMD_DAEMON_PYTHON) runs older qmd-daemon code" in stderr

    # pointed at this client's own Python, the next call replaces it
    proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
    assert proc.returncode == 0 and "restarting the daemon" in proc.stderr, proc.stderr
    assert state_of(daemon_home)["schema"] == SCHEMA_VERSION


def test_a_daemon_whose_code_was_reinstalled_under_it_is_replaced(daemon_home: Path, tmp_path: Path) -> None:
    # a `pip install -U` of a version with the same schema left the old daemon serving the old
    # code (the fixes the user upgraded for) until it idled out, though docs/install.md promised
    # the first new client replaces it
    repo = make_repo(tmp_path / "proj")
    package_file = tmp_path / "installed" / "__init__.py"
    package_file.parent.mkdir()
    package_file.write_text('__version__ = "0.1.0"\n')
    with daemon_running(daemon_home, _STAMPED_DAEMON, str(package_file)) as running:
        assert state_of(daemon_home)["code"]["file"] == str(package_file)
        proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
        assert proc.returncode == 0 and "restarting" not in proc.stderr, proc.stderr
        assert state_of(daemon_home)["pid"] == running.pid, "code unchanged on disk: the daemon is kept"

        package_file.write_text('__version__ = "0.1.0"  # rebuilt\n')  # what pip -U does to it
        proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        assert f"restarting the daemon (pid {running.pid}): its code was replaced on disk" in proc.stderr
        assert running.wait(timeout=30) == 0, "the daemon is asked to stop, not killed"
        assert json.loads(proc.stdout)[0]["path"] == "src/client.py"
        state = state_of(daemon_home)
        assert state["pid"] != running.pid and pid_running(state["pid"])
        assert state["code"]["file"] == qmd_daemon.__file__


def test_a_package_file_gone_is_no_reason_to_restart(tmp_path: Path) -> None:
    # mid-install (pip removes the old files first) or a removed environment: starting the same
    # Python again could start nothing, so the daemon that runs is kept
    package_file = tmp_path / "__init__.py"
    package_file.write_text("x = 1\n")
    found = package_file.stat()
    state = {"code": {"file": str(package_file), "mtime_ns": found.st_mtime_ns, "size": found.st_size}}
    assert not _qmd_client.code_replaced(state)
    package_file.write_text("x = 22\n")
    assert _qmd_client.code_replaced(state)
    package_file.unlink()
    assert not _qmd_client.code_replaced(state)
    assert not _qmd_client.code_replaced({"schema": 9})  # a daemon from before the stamp


def test_a_daemon_from_before_the_code_stamp_is_replaced_once(daemon_home: Path, tmp_path: Path) -> None:
    # the version before this one wrote no `code`: left running across a pip install -U with the
    # same schema, it would serve the old code until it idled out
    repo = make_repo(tmp_path / "proj")
    with daemon_running(daemon_home, _UNSTAMPED_DAEMON) as running:
        assert state_of(daemon_home)["code"] is None
        proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        assert f"restarting the daemon (pid {running.pid}): it runs older code" in proc.stderr
        assert running.wait(timeout=30) == 0
        replacement = state_of(daemon_home)
        assert replacement["code"]["file"] == qmd_daemon.__file__
        proc = run_client("ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo)
        assert proc.returncode == 0 and "restarting" not in proc.stderr, proc.stderr
        assert state_of(daemon_home)["pid"] == replacement["pid"]


def test_an_unstamped_daemon_that_qmd_daemon_python_starts_is_kept(daemon_home: Path, tmp_path: Path) -> None:
    # QMD_DAEMON_PYTHON names an install from before the stamp: starting it again starts the
    # same code, so it is started once and used, with one line saying why
    python = _python_serving(tmp_path, _UNSTAMPED_DAEMON)
    repo = make_repo(tmp_path / "proj")
    pids = []
    for _ in range(2):
        proc = run_client(
            "ai_search.py", "parse cookie header", "--json", home=daemon_home, cwd=repo,
            QMD_DAEMON_PYTHON=str(python),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "restarting the daemon" not in proc.stderr
        assert "a version before this one" in proc.stderr
        pids.append(state_of(daemon_home)["pid"])
    assert len(set(pids)) == 1
    # the teardown's stop must know it as this test's daemon, though its command line runs
    # older_daemon.py, not qmd_daemon (it outlived the suite before)
    stop_daemon(daemon_home)
    assert not pid_running(pids[0])
