"""Doc-to-code links: a markdown chunk that cites a code path or a defined symbol points to it.

A doc chunk's links depend on its own text, the collection's code paths (a cited suffix must be
unique) and which code files define each name. An update therefore re-links only the chunks of
the doc files it rewrote, plus the doc chunks that mention a name whose defining files changed or
the file name of a code file that appeared or went away (`LinkChanges`); the FTS index finds
those, so an edit costs a few queries rather than a pass over every doc chunk of the collection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from qmd_daemon.store.protocols import ChunkStore
from qmd_daemon.text.identifiers import looks_like_symbol

_BACKTICK = re.compile(r"`([^`\n]{2,120})`")
_PATHLIKE = re.compile(r"[\w./-]+\.[A-Za-z]{1,5}\b")
# An identifier that is a whole word (not the tail of `9lives` or of a word in another script):
# such a word is one token of the FTS index too, which is what lets `LinkChanges` find the doc
# chunks a changed name can reach with an FTS query instead of reading every doc chunk.
_WORD = re.compile(r"(?<!\w)[A-Za-z_][A-Za-z0-9_]*(?!\w)")
_MAX_FILES_PER_SYMBOL = 3
_MIN_SYMBOL_LENGTH = 4


def _path_index(code_files: dict[str, int]) -> dict[str, list[int]]:
    """Full paths and unique-enough suffixes (basename, last two parts) to file ids."""
    index: dict[str, list[int]] = {}
    for path, file_id in code_files.items():
        parts = PurePosixPath(path).parts
        for n in range(1, len(parts) + 1):
            index.setdefault("/".join(parts[-n:]), []).append(file_id)
    return index


def mentioned_names(text: str) -> set[str]:
    """Every name in text that a link by symbol could use (the lookup keys of `definitions`)."""
    return {word for word in _WORD.findall(text) if len(word) >= _MIN_SYMBOL_LENGTH}


def find_links(
    doc_chunks: list[tuple[int, str]],
    code_files: dict[str, int],
    definitions: dict[str, set[int]],
) -> list[tuple[int, int, str]]:
    """(doc chunk id, code file id, the cited text) for every unambiguous citation.

    `definitions` must hold at least every name the chunks mention (`mentioned_names`)."""
    by_path = _path_index(code_files)
    links: list[tuple[int, int, str]] = []
    for chunk_id, text in doc_chunks:
        cited: dict[int, str] = {}
        for token in _PATHLIKE.findall(text):
            targets = by_path.get(token.lstrip("./"), [])
            if len(targets) == 1:
                cited.setdefault(targets[0], token)
        for span in _BACKTICK.findall(text):
            for word in _WORD.findall(span):
                files = definitions.get(word)
                if files and len(word) >= _MIN_SYMBOL_LENGTH and len(files) <= _MAX_FILES_PER_SYMBOL:
                    for file_id in sorted(files):
                        cited.setdefault(file_id, word)
        # In order of first appearance, so the cited text does not depend on set order.
        # (the lookup first: most words of prose define nothing, and it is the cheaper test)
        for word in dict.fromkeys(_WORD.findall(text)):
            files = definitions.get(word)
            if (not files or len(files) > _MAX_FILES_PER_SYMBOL or len(word) < _MIN_SYMBOL_LENGTH
                    or not looks_like_symbol(word)):
                continue
            for file_id in sorted(files):
                cited.setdefault(file_id, word)
        links.extend((chunk_id, file_id, via) for file_id, via in cited.items())
    return links


@dataclass
class LinkChanges:
    """What an update changed that links depend on, gathered while it writes files."""

    everything: bool = False  # a first index or a new index format: link the whole collection
    doc_paths: set[str] = field(default_factory=set)  # doc files written anew
    names: set[str] = field(default_factory=set)  # names some code file started or stopped defining
    code_paths: set[str] = field(default_factory=set)  # code files that appeared or went away

    def code_file_changed(self, names_before: set[str], names_after: set[str]) -> None:
        """A code file's defined names moved from `names_before` to `names_after`."""
        self.names |= names_before ^ names_after

    def code_file_came_or_went(self, path: str, names: set[str]) -> None:
        self.code_paths.add(path)
        self.names |= names

    @property
    def any(self) -> bool:
        return self.everything or bool(self.doc_paths or self.names or self.code_paths)


def update_links(store: ChunkStore, collection_id: int, changes: LinkChanges) -> int:
    """Re-link the doc chunks `changes` can reach (all of them when `changes.everything`); the
    result equals a full re-link. Returns how many doc chunks were re-linked."""
    if not changes.any:
        return 0
    if changes.everything:
        chunks = store.doc_chunks(collection_id)
    else:
        needles = {n for n in changes.names if len(n) >= _MIN_SYMBOL_LENGTH}
        needles |= {PurePosixPath(p).name for p in changes.code_paths}
        chunks = store.doc_chunks_of_files(collection_id, sorted(changes.doc_paths))
        known = {chunk_id for chunk_id, _ in chunks}
        chunks += [c for c in store.doc_chunks_citing(collection_id, sorted(needles)) if c[0] not in known]
    names: set[str] = set()
    for _, text in chunks:
        names |= mentioned_names(text)
    links = find_links(chunks, store.code_files(collection_id), store.definition_files(collection_id, names))
    store.replace_links(collection_id, links, None if changes.everything else [c for c, _ in chunks])
    return len(chunks)
