"""The files each collection's last walk skipped, counted by reason (`too_large`, `binary`,
`unreadable`, ...), kept in the state folder so `status` can say what is not indexed and why:
an update's report is gone once printed, and the daemon's refreshes print none."""

from __future__ import annotations

import json
from pathlib import Path

from qmd_daemon.ingest.listings import write_cache

FILE_NAME = "skipped.json"


def read_skipped(state_dir: Path) -> dict[str, dict[str, int]]:
    """Collection name -> {reason: files}; empty when nothing was recorded or the file is unreadable."""
    try:
        raw = json.loads((state_dir / FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {
        str(name): {str(k): int(v) for k, v in counts.items() if isinstance(v, int)}
        for name, counts in raw.items()
        if isinstance(counts, dict)
    }


def record_skipped(state_dir: Path, collection: str, skipped: dict[str, int] | None) -> None:
    """Replace one collection's entry (None forgets it). Callers hold the index's writer lock, so
    writes do not race; the file is replaced whole (0600 from creation), never left half-written,
    and a file that cannot be written fails no update (status then says less)."""
    everything = read_skipped(state_dir)
    if skipped is None:
        everything.pop(collection, None)
    else:
        everything[collection] = dict(skipped)
    write_cache(state_dir / FILE_NAME, everything)
