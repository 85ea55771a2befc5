"""Files an update read and left out for their content (binary, generated, minified), kept between
updates so a no-change update does not read them again (495 files, up to 0.9 s of a 58-collection
refresh on a busy disk): a file is trusted to be the same while its size and mtime are, the rule the
index applies to the files it holds. Unreadable files are tried again every time (a mode change
moves no mtime). Kept in a cache file per collection beside its folder listings (ingest/listings.py),
valid for one INDEX_FORMAT (the skip rules are part of it); a missing or damaged file means reads.
"""

from __future__ import annotations

import json
from pathlib import Path

from qmd_daemon.ingest.listings import write_cache

REMEMBERED = frozenset({"binary", "generated", "minified"})  # verdicts of the content alone


class SkippedFiles:
    def __init__(self, path: Path, index_format: str):
        self.path, self.index_format = path, index_format
        self._old = self._load()
        self._new: dict[str, tuple[int, int, str]] = {}

    def _load(self) -> dict[str, tuple[int, int, str]]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            if raw.get("index_format") != self.index_format:
                return {}
            return {p: (int(size), int(mtime), str(why)) for p, (size, mtime, why) in raw["files"].items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return {}

    def verdict(self, path: str, size: int, mtime_ns: int) -> str | None:
        """Why the file was left out last time, when its size and mtime are the same."""
        known = self._old.get(path)
        if known is None or known[:2] != (size, mtime_ns):
            return None
        self._new[path] = known
        return known[2]

    def note(self, path: str, size: int, mtime_ns: int, why: str) -> None:
        if why in REMEMBERED:
            self._new[path] = (size, mtime_ns, why)

    def save(self) -> None:
        """Write them when they changed (files of this update only: a deleted one is dropped)."""
        if self._new != self._old:
            write_cache(self.path, {"index_format": self.index_format, "files": self._new})
