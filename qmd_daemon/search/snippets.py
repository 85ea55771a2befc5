"""The lines of a chunk worth showing: the densest window of query words, starting where they do."""

from __future__ import annotations

import re

SNIPPET_LINES = 12
SNIPPET_CHARS = 800
# Lines that belong to the definition under them: decorators and annotations (`@`), Rust's and
# C#'s attributes (`#[`, `[`); a snippet starting at a definition takes these with it.
LEAD_IN = ("@", "#[", "[")


def best_window(
    text: str, start_line: int, words: list[str], max_lines: int = SNIPPET_LINES, signatures: str = ""
) -> tuple[int, str]:
    """(first line number, snippet text): from the header of a definition of a query word when the
    chunk holds one (`signatures`: the chunk's definition headers, one a line), else the window
    with the most query-word hits, from its first hit or the definition header above it in the
    window. Either way with the decorators right above.
    A chunk often opens with what precedes its definitions (a comment's table, the end of the
    previous statement, another definition that merely mentions the word), and a window that only
    holds the definition's line used to start there. Moving a window's start down to its first hit
    keeps every hit of it: the lines it skips hold none."""
    lines = text.split("\n")
    lowered = [line.lower() for line in lines]
    hits = [sum(1 for w in words if w in line) for line in lowered]
    headers = {h.strip().lower() for h in signatures.split("\n") if h.strip()}
    defining = _defining_line(lowered, words, headers)
    if defining is not None:
        best_start = window_start = defining
    else:
        best_start, best_score = 0, -1
        running = sum(hits[:max_lines])
        for first in range(max(1, len(lines) - max_lines + 1)):
            if first:
                running += (hits[first + max_lines - 1] if first + max_lines - 1 < len(hits) else 0) - hits[
                    first - 1
                ]
            if running > best_score:
                best_start, best_score = first, running
        window_start = best_start
        if best_score <= 0:
            best_start = window_start = 0
        else:
            while not hits[best_start]:
                best_start += 1
            # the header of the definition these lines are in, when the window holds it
            above = [i for i in range(window_start, best_start) if lowered[i].strip() in headers]
            best_start = above[-1] if above else best_start
    while best_start > 0 and lines[best_start - 1].lstrip().startswith(LEAD_IN):
        best_start -= 1
    if defining is None:
        best_start = max(best_start, window_start)
    while best_start < len(lines) - 1 and not lines[best_start].strip():
        best_start += 1
    window = lines[best_start : best_start + max_lines]
    while window and not window[-1].strip():
        window.pop()
    snippet = "\n".join(window)
    if len(snippet) > SNIPPET_CHARS:
        snippet = snippet[: SNIPPET_CHARS - 1].rstrip() + "…"
    return start_line + best_start, snippet


def _defining_line(lowered: list[str], words: list[str], headers: set[str]) -> int | None:
    """The first line of the chunk that is a definition header naming a query word as a whole
    identifier (`close` in `def close(self)`, not in `def call_on_close(...)`)."""
    if not headers or not words:
        return None
    named = re.compile(r"(?<![\w$])(?:" + "|".join(re.escape(w) for w in words) + r")(?![\w$])")
    for index, line in enumerate(lowered):
        if line.strip() in headers and named.search(line):
            return index
    return None
