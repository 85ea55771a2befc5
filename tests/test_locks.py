"""A lock file names the process that holds it (what a waiting writer prints), and the holder does
not write the file again when it already names it: an update takes the writer lock once per
collection, and truncating the file each time waited on the disk's journal (1.3-4 s of a
no-change update of 58 collections). Real lock files, a real second process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from qmd_daemon.locks import holder_pid, waiting_for

_TAKE_IN_A_CHILD = """
import os, sys
from pathlib import Path
from qmd_daemon.locks import waiting_for
with waiting_for(Path(sys.argv[1]), "waiting"):
    print(os.getpid())
"""


def _take(path: Path) -> None:
    with waiting_for(path, "waiting", notify=lambda _line: None):
        assert holder_pid(path) == os.getpid()


def test_the_lock_file_names_its_holder_and_its_last_holder_never_rewrites_it(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite.writer.lock"
    path.write_text(f"{os.getpid()}7 left behind by another process\n")  # starts with our pid
    _take(path)
    assert path.read_text() == str(os.getpid())

    written = path.stat().st_mtime_ns
    time.sleep(0.05)  # past the file system's timestamp tick, so a write would show
    _take(path)
    assert path.stat().st_mtime_ns == written  # neither truncated nor written again

    child = subprocess.run(
        [sys.executable, "-c", _TAKE_IN_A_CHILD, str(path)], capture_output=True, text=True, check=True
    )
    assert holder_pid(path) == int(child.stdout) != os.getpid()
    _take(path)
    assert path.read_text() == str(os.getpid())


_TAKE_ON_A_FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from qmd_daemon.locks import holder_pid, waiting_for
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
with waiting_for(Path(sys.argv[1]), "waiting"):
    print("held", holder_pid(Path(sys.argv[1])))
"""


def test_a_lock_is_taken_when_its_pid_cannot_be_written(tmp_path: Path) -> None:
    """On a full disk the pid write failed and so did every command, a read-only `status` or a
    search included, with a bare `No space left on device`: the pid only names the holder."""
    path = tmp_path / "index.sqlite.upgrade.lock"
    child = subprocess.run(
        [sys.executable, "-c", _TAKE_ON_A_FULL_DISK, str(path)], capture_output=True, text=True
    )
    assert (child.returncode, child.stdout, child.stderr) == (0, "held None\n", "")
