"""Chunk markdown at headings.

Sections start at ATX (`#`, `##`, `###`) and setext headings of level <= SPLIT_LEVEL; `#` lines
inside fenced code blocks are not headings. Each chunk's `heading` is the heading path
("Install > From source"); every heading (any level) is a Definition(kind="heading"). Front
matter stays with the first chunk. Small neighbouring sections are merged up to a merge cap;
a long section is cut into overlapping windows that keep its heading path.
"""

from __future__ import annotations

import re

from qmd_daemon.ingest.chunk_fallback import (
    MAX_CHARS,
    MAX_LINES,
    OVERLAP_LINES,
    Caps,
    DefTable,
    LineIndex,
    Piece,
    Unit,
    group_units,
    pieces_to_chunks,
    split_lines,
)
from qmd_daemon.text.chunk_model import Chunk, Definition

SPLIT_LEVEL = 3
# Sections are merged with their neighbours only while the merged chunk stays under this share
# of the caps: a doc chunk about one topic embeds better than a chunk of five topics.
MERGE_SHARE = 0.5

_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSE_RE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_PARAGRAPH_RE = re.compile(r"^ {0,3}(?:[-*+>]|\d+[.)]|#|`{3}|~{3}|<|\|)")


def _front_matter_end(lines: list[str]) -> int:
    """The last row of YAML (---) or TOML (+++) front matter, -1 if none."""
    if not lines or lines[0].strip() not in ("---", "+++"):
        return -1
    fence = lines[0].strip()
    closers = ("---", "...") if fence == "---" else ("+++",)
    for row in range(1, min(len(lines), 400)):
        if lines[row].strip() in closers:
            return row
    return -1


def find_headings(lines: list[str]) -> list[tuple[int, int, int, str]]:
    """(start_row, title_row, level, title) of every heading outside fenced code and front matter."""
    out: list[tuple[int, int, int, str]] = []
    fence: str | None = None
    row = _front_matter_end(lines) + 1
    prev_paragraph = False
    n = len(lines)
    while row < n:
        line = lines[row]
        fence_match = None if len(line) > 2000 else _FENCE_RE.match(line)
        if fence is not None:
            if (
                fence_match
                and fence_match.group(1)[0] == fence[0]
                and len(fence_match.group(1)) >= len(fence)
                and not fence_match.group(2).strip()
            ):
                fence = None
            row += 1
            prev_paragraph = False
            continue
        if fence_match and not (fence_match.group(1)[0] == "`" and "`" in fence_match.group(2)):
            fence = fence_match.group(1)
            row += 1
            prev_paragraph = False
            continue
        if len(line) <= 2000:
            atx = _ATX_RE.match(line)
            if atx:
                title = _ATX_CLOSE_RE.sub("", atx.group(2) or "").strip()
                out.append((row, row, len(atx.group(1)), title))
                row += 1
                prev_paragraph = False
                continue
            setext = _SETEXT_RE.match(line)
            if setext and prev_paragraph:
                level = 1 if setext.group(1)[0] == "=" else 2
                out.append((row - 1, row - 1, level, lines[row - 1].strip()))
                row += 1
                prev_paragraph = False
                continue
        stripped = line.strip()
        indented = line.startswith(("    ", "\t"))
        prev_paragraph = bool(stripped) and not indented and not _NOT_PARAGRAPH_RE.match(line)
        row += 1
    return out


def chunk_markdown(
    path: str,
    text: str,
    language: str | None = "markdown",
    *,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
    overlap: int = OVERLAP_LINES,
    split_level: int = SPLIT_LEVEL,
    merge_share: float = MERGE_SHARE,
) -> list[Chunk]:
    """Chunk markdown by heading sections, with heading paths and heading definitions."""
    if not text.strip():
        return []
    caps = Caps(max_lines, max_chars, overlap).normalized()
    lines = split_lines(text)
    index = LineIndex(lines)
    table = DefTable()
    stack: list[tuple[int, str]] = []
    starts: list[tuple[int, str]] = []  # (row, heading path) of each section
    for start, title_row, level, title in find_headings(lines):
        table.add(title_row, Definition(title or "(untitled)", "heading", title_row + 1), "")
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        if level <= split_level:
            path_text = " > ".join(t for _, t in stack if t)
            if starts and start <= starts[-1][0]:
                starts[-1] = (starts[-1][0], path_text)
            else:
                starts.append((start, path_text))
    table.sort()

    n = len(lines)
    units: list[Unit] = []
    if not starts or starts[0][0] > 0:
        first_end = (starts[0][0] - 1) if starts else n - 1
        units.append(Unit(0, first_end))  # preamble: front matter, badges, intro
    for i, (start, path_text) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else n - 1
        units.append(Unit(start, end, True, heading=path_text, split=_section(path_text)))
    # the preamble keeps the first section's heading when merged with it
    merge_caps = Caps(
        max(1, int(caps.max_lines * merge_share)), max(16, int(caps.max_chars * merge_share)), caps.overlap
    )
    pieces: list[Piece] = []
    for piece in group_units(units, index, merge_caps, ""):
        pieces.append(piece)
    return pieces_to_chunks(index, pieces, table, caps, with_signature=False)


def _section(heading: str):
    def split(start: int, end: int) -> list[Piece]:
        return [Piece(start, end, heading)]

    return split
