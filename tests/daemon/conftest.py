"""The started daemon the daemon tests share: real engines, no watcher, idle after 30 minutes."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.daemon.server import Daemon
from qmd_daemon.settings import Settings


@pytest.fixture
async def daemon(home: Path):
    d = Daemon(Settings.from_env(), watch=False, idle_minutes=30)
    await d.start()
    yield d
    await d.close()
