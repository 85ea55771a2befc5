"""A process left running across an upgrade (a daemon started before `pip install -U`) keeps its
old code: once newer code has upgraded the index's schema, that process must not write, since it
would not keep up the tables the newer schema derives from every write (term_stats, file_stems).
Real SQLite and FTS5, a real index; the newer code is a real child process whose schema has one
more step than this code's (the only way to have code newer than the code under test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.errors import IndexDatabaseError
from qmd_daemon.store.connection import OperationalError, sqlite
from tests.conftest import indexed, upgrade_by_newer_code


def test_a_running_writer_is_refused_once_newer_code_upgraded_the_index(engine, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    name = indexed(engine, root, {"a.py": "def alpha():\n    return 1\n"})
    upgrade_by_newer_code(Path(engine.store.path))
    (root / "b.py").write_text("def beta():\n    return 2\n")
    with pytest.raises(IndexDatabaseError, match="upgraded to schema .* by a newer qmd-daemon") as caught:
        engine.update([name])
    assert "\n" not in str(caught.value)
    files = engine.store.conn.execute("SELECT path FROM files").fetchall()
    assert [row[0] for row in files] == ["a.py"], "the refused update must leave the index as it was"


def test_code_from_before_the_guard_cannot_write(engine, tmp_path: Path) -> None:
    """Code older than the guard registers no writer function: SQLite cannot even run its write."""
    indexed(engine, tmp_path / "proj", {"a.py": "def alpha():\n    return 1\n"})
    path = engine.store.path
    engine.close()
    old = sqlite.connect(str(path), isolation_level=None)
    try:
        with pytest.raises(OperationalError, match="no such function: qmd_writer_schema"):
            old.execute("DELETE FROM files")
        assert old.execute("SELECT count(*) FROM files").fetchone()[0] == 1
    finally:
        old.close()
