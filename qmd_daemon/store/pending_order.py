"""The order in which chunks without a vector are embedded.

The deep embedder is slow on a CPU (MiniLM ~9 chunks/s, Qwen3 far slower), so a large index waits
hours for its vectors; in chunk-id order the files the user is editing, and those searches keep
returning, waited behind vendored and old files. Pending chunks are taken instead: the current
repository's collection first; within it, files edited recently (files.mtime_ns) first, then files
that searches often return, then the rest, newest first. Both backends sort by the same keys.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

# A file modified this recently is "being edited": it goes before every file searches returned.
RECENT_EDIT_SECONDS = 3600


@dataclass(frozen=True)
class EmbedPriority:
    """`first_collection`: the collection of the most recent request (its chunks go first);
    `recent_since_ns`: files modified at or after this go before the rest of their collection;
    `returned`: (collection id, path) -> how often searches returned the file (a hint, decayed)."""

    first_collection: int | None = None
    recent_since_ns: int = 0
    returned: Mapping[tuple[int, str], int] = field(default_factory=dict)

    @classmethod
    def now(
        cls, first_collection: int | None = None, returned: Mapping[tuple[int, str], int] | None = None
    ) -> EmbedPriority:
        """The priority at this moment: "recent" means the last RECENT_EDIT_SECONDS."""
        since = time.time_ns() - RECENT_EDIT_SECONDS * 1_000_000_000
        return cls(first_collection, since, dict(returned or {}))

    def returned_rows(self) -> list[tuple[int, str, int]]:
        """(collection id, path, times returned), for the query's join."""
        return [(collection_id, path, count) for (collection_id, path), count in self.returned.items()]


# The sort keys, shared by both backends' `pending` (c: chunks, f: their files, h: the returned
# files' (file id, hits), left-joined; the two placeholders: first_collection, recent_since_ns).
ORDER_BY = """ORDER BY (f.collection_id = {first}) DESC, (f.mtime_ns >= {since}) DESC,
                       coalesce(h.hits, 0) DESC, f.mtime_ns DESC, c.id"""
