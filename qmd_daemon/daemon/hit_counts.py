"""How often searches return each file: a hint for which chunks the deep embedder takes first.

Kept in the daemon's memory, not in the index (a search never writes the index), and saved now
and then to a small owner-only JSON file in the state folder, so a restart keeps the habit.
Bounded: every DECAY_EVERY recorded searches each count is halved (old habits fade, a count of 1
drops), and past MAX_FILES files the least returned are dropped. A missing file starts empty; an
unreadable or malformed one is ignored with a log line, never an error: it is only a hint.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from qmd_daemon.atomic_files import replace_file
from qmd_daemon.daemon.state import ensure_private_dir

log = logging.getLogger("qmd_daemon.hit_counts")

FILE_NAME = "hit_counts.json"
MAX_FILES = 2000  # ~100 KB of JSON; a trim keeps the KEEP_FILES most returned
KEEP_FILES = MAX_FILES * 3 // 4
DECAY_EVERY = 500


class HitCounts:
    """Times each (collection, path) was among a search's hits. `record` runs on the event loop,
    `returned` on the writer thread (the embed job): a lock keeps the two apart."""

    def __init__(self, state_dir: Path):
        self.path = state_dir / FILE_NAME
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}
        self._searches = 0
        self._changed = False
        self._load()

    def _load(self) -> None:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            counts = {(str(name), str(path)): int(n) for name, path, n in raw["files"]}
            searches = int(raw["searches"])
        except FileNotFoundError:
            return
        # malformed (a count of 1e999 overflows int, a deep nest recurses): a hint, start afresh
        except (OSError, ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
            log.warning("ignoring %s (%s): search hit counts start afresh", self.path, exc)
            return
        self._counts = {key: n for key, n in counts.items() if n > 0}
        self._searches = searches
        self._trim()

    def record(self, hits: Iterable[Mapping[str, Any]]) -> None:
        """One search's hits: each file counts once, however many of its chunks were returned."""
        files = {(str(hit["collection"]), str(hit["path"])) for hit in hits}
        if not files:
            return
        with self._lock:
            for key in files:
                self._counts[key] = self._counts.get(key, 0) + 1
            self._searches += 1
            if self._searches % DECAY_EVERY == 0:
                self._counts = {key: n // 2 for key, n in self._counts.items() if n > 1}
            self._trim()
            self._changed = True

    def _trim(self) -> None:
        if len(self._counts) > MAX_FILES:
            kept = sorted(self._counts.items(), key=lambda item: item[1], reverse=True)[:KEEP_FILES]
            self._counts = dict(kept)

    def returned(self) -> dict[str, dict[str, int]]:
        """Collection -> path -> count, a copy the embed job may read while searches go on."""
        out: dict[str, dict[str, int]] = {}
        with self._lock:
            for (name, path), n in self._counts.items():
                out.setdefault(name, {})[path] = n
        return out

    def save(self) -> None:
        """Write the counts (0600) when they changed since the last save; a failure is logged."""
        with self._lock:
            if not self._changed:
                return
            files = [[name, path, n] for (name, path), n in self._counts.items()]
            text = json.dumps({"searches": self._searches, "files": files})
            self._changed = False
        try:
            ensure_private_dir(self.path.parent)
            replace_file(self.path, text)
        except OSError as exc:
            log.warning("could not save the search hit counts to %s: %s", self.path, exc)
