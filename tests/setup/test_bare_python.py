"""install.sh runs the setup with the machine's own Python, before any environment exists: the
setup may import the standard library and the clients only. The tests run it with the project's
environment, where every dependency is found, so a third-party import (filelock, through
qmd_daemon.locks) passed them and broke `./install.sh` on an upgrade walk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_setup_loads_without_site_packages() -> None:
    proc = subprocess.run(
        [sys.executable, "-S", "-m", "qmd_daemon.setup", "--help"],  # -S: no site-packages
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--semantic-retrieval" in proc.stdout
