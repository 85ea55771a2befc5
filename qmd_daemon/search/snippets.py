"""The lines of a chunk worth showing: the densest window of query words."""

from __future__ import annotations

SNIPPET_LINES = 12
SNIPPET_CHARS = 800


def best_window(
    text: str, start_line: int, words: list[str], max_lines: int = SNIPPET_LINES
) -> tuple[int, str]:
    """(first line number, snippet text) of the window with the most query-word hits."""
    lines = text.split("\n")
    lowered = [line.lower() for line in lines]
    hits = [sum(1 for w in words if w in line) for line in lowered]
    best_start, best_score = 0, -1
    running = sum(hits[:max_lines])
    for first in range(max(1, len(lines) - max_lines + 1)):
        if first:
            running += (hits[first + max_lines - 1] if first + max_lines - 1 < len(hits) else 0) - hits[
                first - 1
            ]
        if running > best_score:
            best_start, best_score = first, running
    if best_score <= 0:
        best_start = 0
    while best_start < len(lines) - 1 and not lines[best_start].strip():
        best_start += 1
    window = lines[best_start : best_start + max_lines]
    while window and not window[-1].strip():
        window.pop()
    snippet = "\n".join(window)
    if len(snippet) > SNIPPET_CHARS:
        snippet = snippet[: SNIPPET_CHARS - 1].rstrip() + "…"
    return start_line + best_start, snippet
