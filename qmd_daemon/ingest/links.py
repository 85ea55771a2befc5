"""Doc-to-code links: a markdown chunk that cites a code path or a defined symbol points to it."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from qmd_daemon.ingest.identifiers import IDENTIFIER, looks_like_symbol

_BACKTICK = re.compile(r"`([^`\n]{2,120})`")
_PATHLIKE = re.compile(r"[\w./-]+\.[A-Za-z]{1,5}\b")
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


def find_links(
    doc_chunks: list[tuple[int, str]],
    code_files: dict[str, int],
    definitions: dict[str, set[int]],
) -> list[tuple[int, int, str]]:
    """(doc chunk id, code file id, the cited text) for every unambiguous citation."""
    by_path = _path_index(code_files)
    links: list[tuple[int, int, str]] = []
    for chunk_id, text in doc_chunks:
        cited: dict[int, str] = {}
        for token in _PATHLIKE.findall(text):
            targets = by_path.get(token.lstrip("./"), [])
            if len(targets) == 1:
                cited.setdefault(targets[0], token)
        for span in _BACKTICK.findall(text):
            for word in IDENTIFIER.findall(span):
                files = definitions.get(word)
                if files and len(word) >= _MIN_SYMBOL_LENGTH and len(files) <= _MAX_FILES_PER_SYMBOL:
                    for file_id in files:
                        cited.setdefault(file_id, word)
        for word in set(IDENTIFIER.findall(text)):
            if len(word) < _MIN_SYMBOL_LENGTH or not looks_like_symbol(word):
                continue
            files = definitions.get(word)
            if files and len(files) <= _MAX_FILES_PER_SYMBOL:
                for file_id in files:
                    cited.setdefault(file_id, word)
        links.extend((chunk_id, file_id, via) for file_id, via in cited.items())
    return links
