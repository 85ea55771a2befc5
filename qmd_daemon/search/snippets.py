"""The lines of a chunk worth showing: the densest window of query words, starting where they do."""

from __future__ import annotations

SNIPPET_LINES = 12
SNIPPET_CHARS = 800
# Lines that belong to the definition under them: decorators and annotations (`@`), Rust's and
# C#'s attributes (`#[`, `[`); a snippet starting at a definition takes these with it.
LEAD_IN = ("@", "#[", "[")


def best_window(
    text: str, start_line: int, words: list[str], max_lines: int = SNIPPET_LINES
) -> tuple[int, str]:
    """(first line number, snippet text) of the window with the most query-word hits, starting at
    its first hit (with the decorators right above it): a chunk often opens with what precedes
    its definition (a comment's table, the end of the previous statement), and a window that
    merely holds the definition's line would start there. Moving the start down to the first hit
    keeps every hit of the window, since the lines it skips hold none."""
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
    else:
        window_start = best_start
        while not hits[best_start]:
            best_start += 1
        while best_start > window_start and lines[best_start - 1].lstrip().startswith(LEAD_IN):
            best_start -= 1
    while best_start < len(lines) - 1 and not lines[best_start].strip():
        best_start += 1
    window = lines[best_start : best_start + max_lines]
    while window and not window[-1].strip():
        window.pop()
    snippet = "\n".join(window)
    if len(snippet) > SNIPPET_CHARS:
        snippet = snippet[: SNIPPET_CHARS - 1].rstrip() + "…"
    return start_line + best_start, snippet
