"""The first open after an upgrade, as a user meets it: the schema steps (minutes on a big index)
are announced; a second process opening the index meanwhile says it waits and finds them done
instead of running them again (or failing at SQLite's busy timeout); a process killed -9 mid-step
leaves an index that opens at the version before and is brought up to date on the next open.
Real SQLite and FTS5, real indexes, real child processes (the child's one change: its counting
step pauses, so the test can act while it holds the upgrade)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from qmd_daemon.store import schema
from qmd_daemon.store.connection import sqlite, upgrade_lock_path
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.lexical_query import Word
from tests.conftest import indexed

REPO = Path(__file__).resolve().parents[2]

# A child process upgrading the index whose schema step 4 pauses after its real work, inside its
# transaction: it writes READY, then waits for GO (or for its end, when there is no GO file).
_CHILD = """
import sys, time
from pathlib import Path
from qmd_daemon.store import schema
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.term_stats import fill

index, ready, go = map(Path, sys.argv[1:4])

def paused_fill(conn):
    fill(conn)
    ready.write_text("1")
    while not go.exists():
        time.sleep(0.05)

schema.MIGRATIONS[4] = [schema.MIGRATIONS[4][0], paused_fill]
IndexStore(index).close()
"""


def schema_3_index(engine: Any, tmp_path: Path) -> Path:
    """An index as the code before today left it: no term_stats or file_stems, schema 3."""
    name = indexed(engine, tmp_path / "proj", {"a.py": "def alpha():\n    return 1\n", "b.md": "# Beta\n"})
    assert name
    path = Path(engine.store.path)
    engine.close()
    conn = sqlite.connect(str(path))
    for table in ("term_stats", "file_stems"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    return path


def _version(path: Path) -> int:
    conn = sqlite.connect(str(path))
    try:
        return int(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
    finally:
        conn.close()


def start_paused_upgrade(path: Path, tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    ready, go = tmp_path / "ready", tmp_path / "go"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), str(ready), str(go)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert child.poll() is None, child.stderr.read() if child.stderr else b""
        assert time.monotonic() < deadline, "the child never reached schema step 4"
        time.sleep(0.05)
    return child, ready, go


def _searches_right(store: IndexStore) -> None:
    """The upgraded index finds its one `alpha` chunk and counts the word once; closes the store."""
    try:
        every = [int(row[0]) for row in store.conn.execute("SELECT id FROM collections")]
        assert store.fts_count(Word("alpha"), every) == 1
        assert store.conn.execute("SELECT count(*) FROM term_stats WHERE token = 'alpha'").fetchone()[0] == 1
    finally:
        store.close()


def test_the_upgrade_is_announced(engine: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path = schema_3_index(engine, tmp_path)
    capfd.readouterr()
    _searches_right(IndexStore(path))
    err = capfd.readouterr().err
    assert f"upgrading the index {path} from schema 3 to {schema.SCHEMA_VERSION}" in err
    assert not upgrade_lock_path(path).exists()
    store = IndexStore(path)  # up to date: nothing said
    store.close()
    assert capfd.readouterr().err == ""


def test_a_second_process_waits_for_the_upgrade_instead_of_running_it_again(
    engine: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    path = schema_3_index(engine, tmp_path)
    counted: list[int] = []
    step_4 = schema.MIGRATIONS[4]

    def counting_fill(conn: Any) -> None:
        counted.append(1)
        step_4[1](conn)

    monkeypatch.setitem(schema.MIGRATIONS, 4, [step_4[0], counting_fill])
    child, _, go = start_paused_upgrade(path, tmp_path)
    opened: list[IndexStore | BaseException] = []

    def open_index() -> None:
        try:
            opened.append(IndexStore(path))
        except BaseException as exc:  # reported by the assertion below, not lost in the thread
            opened.append(exc)

    second = threading.Thread(target=open_index)
    second.start()
    said, deadline = "", time.monotonic() + 60  # a ceiling: the second opener says it waits at once
    while "waiting for another process upgrading the index" not in said:
        assert time.monotonic() < deadline and second.is_alive(), f"the second opener did not wait: {said}"
        time.sleep(0.05)
        said += capfd.readouterr().err
    go.write_text("1")  # only once the second opener waits on the child's upgrade
    assert child.wait(timeout=60) == 0, child.stderr.read() if child.stderr else b""
    second.join(timeout=60)
    store = opened[0]
    assert isinstance(store, IndexStore), store
    _searches_right(store)
    assert counted == []  # the child's count stood; the second process did not count again


def test_a_process_killed_mid_upgrade_leaves_an_index_that_opens(engine: Any, tmp_path: Path) -> None:
    path = schema_3_index(engine, tmp_path)
    child, _, _ = start_paused_upgrade(path, tmp_path)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert _version(path) == 3  # step 4's transaction never landed
    _searches_right(IndexStore(path))
    assert _version(path) == schema.SCHEMA_VERSION
