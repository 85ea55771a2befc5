"""One index writer at a time across processes: writers queue on the writer lock (saying whom they
wait for) instead of failing with "database is locked" after SQLite's 30 s busy timeout; readers
never wait. Real processes: the CLI, the daemon, and this test process holding the lock itself
(what a long update in another terminal does), with an open write transaction on the index."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from clients import _qmd_client as qc
from qmd_daemon.engine import Engine
from qmd_daemon.locks import file_lock, writer_lock_path
from qmd_daemon.settings import Settings
from qmd_daemon.store.connection import connect
from qmd_daemon.store.llm_cache import SqliteLLMCache
from tests.conftest import run_cli, write_tree
from tests.daemon.support import env_for, make_repo, wait_for
from tests.daemon.test_serve import healthy_state

WAITING = f"waiting for another update (pid {os.getpid()})..."


@contextmanager
def another_writer(index: Path) -> Iterator[None]:
    """Be the other writer: hold the writer lock and a write transaction, as an update does."""
    lock = file_lock(writer_lock_path(index))
    lock.acquire()
    conn, _ = connect(index)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        conn.execute("COMMIT")
        conn.close()
        lock.release()


def _cli(home: Path, log: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from qmd_daemon.cli import main; main()", *args],
        env=dict(os.environ, QMD_DAEMON_HOME=str(home)),
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )


def test_cli_update_and_remove_wait_for_the_writer_then_succeed(home: Path, tmp_path: Path) -> None:
    a = make_repo(tmp_path / "alpha", {"a.py": "def alpha_one():\n    return 1\n"})
    b = make_repo(tmp_path / "beta", {"b.py": "def beta_one():\n    return 1\n"})
    run_cli("collection", "add", str(a), env_home=home, check=True)
    run_cli("collection", "add", str(b), env_home=home, check=True)
    write_tree(a, {"later.py": "def arrived_while_waiting():\n    return 2\n"})
    index = Settings.from_env().index_path
    logs = tmp_path / "update.err", tmp_path / "remove.err"

    with another_writer(index):
        update = _cli(home, logs[0], "update", "-c", "repo-alpha")
        remove = _cli(home, logs[1], "collection", "remove", "repo-beta")
        wait_for(lambda: all(WAITING in log.read_text() for log in logs), timeout=60, step=0.1)
        # a reader is not held up by the writer (WAL): the writer holds its transaction until this
        # block ends, so a search that waited for it could not finish here; SQLite would fail it
        # with "database is locked" after its busy timeout (check=True), however long that took
        search = run_cli("search", "alpha_one", "--json", env_home=home, check=True)
        assert '"a.py"' in search.stdout
        assert update.poll() is None and remove.poll() is None  # still queued, not failed

    assert update.wait(timeout=120) == 0, logs[0].read_text()
    assert remove.wait(timeout=120) == 0, logs[1].read_text()
    for log in logs:
        assert "locked" not in log.read_text() and "Traceback" not in log.read_text()
    assert "arrived_while_waiting" in run_cli("search", "arrived_while_waiting", env_home=home).stdout
    listed = run_cli("collection", "list", env_home=home, check=True).stdout
    assert "repo-alpha" in listed and "repo-beta" not in listed
    engine = Engine(Settings.from_env())
    try:
        assert engine.store.collection_id("repo-beta") is None and engine.search("beta_one") == []
    finally:
        engine.close()


def _daemon(home: Path, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "qmd_daemon.daemon", "serve"],
        env=env_for(home),
        stdout=subprocess.PIPE,
        stderr=log.open("w"),
        text=True,
    )


def test_daemon_jobs_wait_for_another_writer_and_shut_down_while_waiting(
    daemon_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QMD_DAEMON_HOME", str(daemon_home))
    repo = make_repo(tmp_path / "gamma", {"g.py": "def gamma_one():\n    return 1\n"})
    engine = Engine(Settings.from_env())
    try:
        engine.update([engine.add_collection(repo).name])
        index = engine.settings.index_path
    finally:
        engine.close()
    log = tmp_path / "daemon.err"
    proc = _daemon(daemon_home, log)
    state = healthy_state(daemon_home).as_dict()

    def jobs_idle() -> bool:
        jobs = qc.http(state, "GET", "/status", timeout=10)["jobs"]
        return jobs["running"] is None and not jobs["queued"]

    wait_for(jobs_idle, timeout=60, step=0.1)

    with another_writer(index):
        write_tree(repo, {"late.py": "def gamma_late():\n    return 2\n"})
        job = qc.http(state, "POST", "/refresh", {"path": str(repo)}, timeout=10)["jobs"][0]
        wait_for(lambda: WAITING in log.read_text(), timeout=60, step=0.1)
        assert qc.http(state, "GET", f"/jobs/{job['id']}", timeout=10)["state"] == "running"
        found = qc.http(state, "POST", "/search", {"query": "gamma_one", "path": str(repo)}, timeout=20)
        assert found["hits"] and found["hits"][0]["path"] == "g.py"  # searches go on meanwhile

    def finished() -> dict | None:
        current = qc.http(state, "GET", f"/jobs/{job['id']}", timeout=10)
        return current if current["state"] in ("done", "failed") else None

    assert wait_for(finished, timeout=60, step=0.1)["state"] == "done", log.read_text()
    assert "locked" not in log.read_text()

    with another_writer(index):  # a job waiting at shutdown gives up; the daemon still stops
        write_tree(repo, {"later.py": "def gamma_later():\n    return 3\n"})
        qc.http(state, "POST", "/refresh", {"path": str(repo)}, timeout=10)
        wait_for(lambda: log.read_text().count(WAITING) >= 2, timeout=60, step=0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()


def test_a_search_never_waits_to_cache_a_model_answer(engine: Engine) -> None:
    # rerank scores and expansions are cached by the searching process: a write, which SQLite held
    # for 30 s and then failed with "database is locked" while an update's transaction was open
    conn = engine.store.conn
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30000
    # A put that waited for the writer would now hang for 10 minutes: 60 s is a ceiling only that
    # crosses, however loaded the box (a 2 s bound against the real 30 s could miss under load).
    conn.execute("PRAGMA busy_timeout = 600000")
    cache = SqliteLLMCache(engine.store)
    with another_writer(engine.settings.index_path):
        started = time.monotonic()
        cache.put("rerank:key", "0.5")
        assert time.monotonic() - started < 60 and cache.get("rerank:key") is None
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 600000  # the put gave its wait back
    conn.execute("PRAGMA busy_timeout = 30000")
    cache.put("rerank:key", "0.5")
    assert cache.get("rerank:key") == "0.5"
