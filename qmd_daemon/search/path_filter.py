"""Searching a part of the collections: gitignore-style path patterns (`src/`, `*.py`,
`!**/*.test.ts`), as ripgrep's -g or GitHub's `path:` scope a search.

The patterns are matched (pathspec's GitIgnoreSpec) against each file's path relative to its
collection root once per data state, scope and patterns, and the allowed files are pushed down
into retrieval: BM25 ranks among their chunks and the vectors are searched among them, so a chunk
the whole scope ranks far down still comes back (a filter on the final list would lose it). An
agent repeats filtered searches while it works in one folder: the allowed files are kept until the
data changes, so a whole-tree scope's 60k paths are matched once, not once a search.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pathspec import GitIgnoreSpec

from qmd_daemon.errors import PathPatternError
from qmd_daemon.search.lexical import kept_for_this_data
from qmd_daemon.store.protocols import ChunkRow, ChunkStore, VectorStore

# Allowed chunks up to which the vectors compare the question with each of them (exact, a few ms);
# past it the normal search is asked for k / (allowed share) and its hits outside are dropped.
EXACT_AMONG = 5000
MAX_OVERFETCH = 50  # the normal search asked for at most this many times k
KEPT_FILTERS = 32  # pattern sets kept per data state before starting over
# Said when the patterns allow no file: an empty answer is then the patterns', not the question's
# (a typo in a folder name looked like "nothing in this repository answers it")
NO_PATH_MATCH = ("no indexed file matches the --path patterns (they are matched against paths relative to "
                 "the collection root, e.g. 'src/', '*.py', '!tests/')")
# A backslash before none of the characters gitignore escapes: a Windows separator (`src\app\`,
# pasted from a Windows path), which as an escape would match nothing or be refused
_WINDOWS_SEPARATOR = re.compile(r"\\(?![\\!#*?\[\] ])")


def _as_gitignore(body: str) -> str:
    """BODY with `\\` separators as `/` and a leading `./` as the root anchor `/`: the path forms a
    user types (`.\\src\\`, `./src/`) that gitignore reads as names no file has."""
    body = _WINDOWS_SEPARATOR.sub("/", body)
    return "/" + body[2:] if body.startswith("./") else body


def path_spec(patterns: Sequence[str]) -> tuple[GitIgnoreSpec | None, GitIgnoreSpec | None]:
    """(the files to keep: None for all, the files to leave out: None for none) of PATTERNS,
    `!pattern` leaving out; each pattern checked on its own so the error names the bad one."""
    keep: list[str] = []
    drop: list[str] = []
    for pattern in patterns:
        body = _as_gitignore(pattern[1:] if pattern.startswith("!") else pattern)
        try:
            parsed = GitIgnoreSpec.from_lines([body]).patterns
        except ValueError:
            parsed = []
        if not body.strip() or len(parsed) != 1 or parsed[0].include is None:
            raise PathPatternError(f"bad path pattern {pattern!r}: expected a gitignore pattern such as "
                                   "'src/', '*.py' or '!tests/'")
        (drop if pattern.startswith("!") else keep).append(body)
    return (GitIgnoreSpec.from_lines(keep) if keep else None,
            GitIgnoreSpec.from_lines(drop) if drop else None)


@dataclass(frozen=True)
class AllowedFiles:
    """The files of a scope the patterns allow: their ids, their share of the scope's files, and
    their chunk ids when at most EXACT_AMONG (None: more)."""

    file_ids: frozenset[int]
    share: float
    chunk_ids: tuple[int, ...] | None


def allowed_files(store: ChunkStore, collection_ids: list[int], patterns: Sequence[str]) -> AllowedFiles:
    """The files PATTERNS allow in the collections, kept until the data changes."""
    kept = kept_for_this_data(store, "path_filter")
    key = (tuple(sorted(collection_ids)), tuple(patterns))
    if key not in kept:
        if len(kept) >= KEPT_FILTERS:
            kept.clear()
        keep, drop = path_spec(patterns)
        files = store.file_paths(collection_ids)
        ids = frozenset(
            file_id for file_id, path in files
            if (keep is None or keep.match_file(path)) and not (drop is not None and drop.match_file(path))
        )
        chunks = store.chunks_of_files(sorted(ids), EXACT_AMONG + 1) if ids else []
        kept[key] = AllowedFiles(ids, len(ids) / max(len(files), 1),
                                 tuple(chunks) if len(chunks) <= EXACT_AMONG else None)
    found: AllowedFiles = kept[key]
    return found


@dataclass(frozen=True)
class PathScope:
    """A search's allowed files, with the store that says which file a vector hit is of."""

    store: ChunkStore
    allowed: AllowedFiles

    def admits(self, chunk: ChunkRow) -> bool:
        return chunk.file_id in self.allowed.file_ids

    def nearest(
        self, vectors: VectorStore, query: Sequence[float], collection_ids: list[int], k: int
    ) -> list[tuple[int, float]]:
        """The k allowed chunks nearest QUERY: each allowed chunk compared when they are few, else
        the normal search's hits, asked for as many more as the allowed share is small."""
        if self.allowed.chunk_ids is not None:
            return vectors.search_among(query, list(self.allowed.chunk_ids), k)
        wanted = int(k / max(self.allowed.share, 1 / MAX_OVERFETCH))
        hits = vectors.search(query, collection_ids, wanted)
        rows = self.store.chunks_by_ids([chunk_id for chunk_id, _ in hits])
        return [(c, s) for c, s in hits if c in rows and self.admits(rows[c])][:k]


def path_scope(store: ChunkStore, collection_ids: list[int], patterns: Sequence[str]) -> PathScope | None:
    """The scope PATTERNS narrow the search to; None without patterns (every chunk searched)."""
    return PathScope(store, allowed_files(store, collection_ids, patterns)) if patterns else None
