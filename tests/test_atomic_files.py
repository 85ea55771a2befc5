"""replace_file, the one "temp file + rename" of every small file the project rewrites: private
from its creation, whole or not there, and a failed write leaves the old file and no temp file.
Real files in a temp dir; the failed write is a real one (a folder stands where the file goes)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from qmd_daemon.atomic_files import replace_file
from qmd_daemon.config import IndexConfig
from qmd_daemon.daemon.state import DaemonState, write_state
from qmd_daemon.ingest.listings import write_cache
from qmd_daemon.setup.state import write_atomic


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_writer_leaves_a_private_whole_file(tmp_path: Path) -> None:
    config = IndexConfig.load(tmp_path / "index.yml")
    config.save()
    state = write_state(tmp_path / "state", DaemonState(port=1, token="t", pid=2, version="0", started_at=0))
    write_cache(tmp_path / "cache" / "walk.json", {"a": 1})
    write_atomic(tmp_path / "setup" / "install.json", "{}\n")
    written = [tmp_path / "index.yml", state, tmp_path / "cache/walk.json", tmp_path / "setup/install.json"]
    assert [_mode(p) for p in written] == [0o600] * 4
    assert not [p for p in tmp_path.rglob("*.tmp")], "no temporary file is left behind"


def test_a_reader_sees_the_old_file_or_the_new_one(tmp_path: Path) -> None:
    target = tmp_path / "big.json"
    old, new = "a" * 1_000_000, "b" * 1_000_000
    replace_file(target, old)
    seen: set[str] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            seen.add(target.read_text())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for text in (new, old) * 20:
            replace_file(target, text)
    finally:
        stop.set()
        reader.join()
    assert seen <= {old, new}


def test_a_failed_replace_leaves_no_temp_file_and_a_mode_is_applied(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()  # a folder where the file goes: the rename fails
    with pytest.raises(OSError):
        replace_file(tmp_path / "taken", "new")
    assert os.listdir(tmp_path) == ["taken"], "the temporary file is removed"
    replace_file(tmp_path / "kept.txt", "old", mode=0o644)
    assert _mode(tmp_path / "kept.txt") == 0o644 and (tmp_path / "kept.txt").read_text() == "old"
