"""Replacing a small file whole: what the state files, index.yml, the installer's records and the
walk caches all need. Standard library only: the installer imports it before any dependency is
installed (tests/test_layers.py keeps it so)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def replace_file(path: Path, text: str, mode: int = 0o600, durable: bool = False) -> None:
    """Write `text` to a temporary file beside `path` (mode 0600 from its creation, so a private
    file is never readable by others, not even for a moment), then rename it over `path`: a reader
    sees the old file or the new one, never half of one. `mode`: the file's mode once written;
    `durable`: fsync before the rename (a file another process trusts after a crash)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode != 0o600:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
