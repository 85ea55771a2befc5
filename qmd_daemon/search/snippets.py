"""The lines of a chunk worth showing: the densest window of query words, starting where they do."""

from __future__ import annotations

import re
from collections.abc import Sequence

from qmd_daemon.search.word_match import WordsMatching, name_parts, stem_forms

SNIPPET_LINES = 12
SNIPPET_CHARS = 800
# Lines that belong to the definition under them: decorators and annotations (`@`), Rust's and
# C#'s attributes (`#[`, `[`); a snippet starting at a definition takes these with it.
LEAD_IN = ("@", "#[", "[")


def best_window(
    text: str,
    start_line: int,
    words: list[str],
    max_lines: int = SNIPPET_LINES,
    signatures: str = "",
    definitions: Sequence[tuple[str, int]] = (),
    blank_runs_as_one: bool = False,
) -> tuple[int, str]:
    """(first line number, snippet text): from the head of a definition of a query word when the
    chunk holds one, else the window with the most query-word hits, from its first hit or the
    head of the definition above it in the window. Either way with the decorators right above.
    `definitions`: (name, line) of the chunk's definitions, lines counted in the file (the
    index's, where the parser found each name); `signatures`: the chunk's definition headers,
    one a line, as the chunker normalised them (a parameter list over several lines joined, the
    `{` dropped: `int uv_timer_start(uv_timer_t* handle, uv_timer_cb cb, ...)`), used to take in
    the lines of a head above its name (C's return type on a line of its own).
    A chunk often opens with what precedes its definitions (a comment's table, the end of the
    previous statement, another definition that merely mentions the word), and a window that only
    holds the definition's line used to start there. Moving a window's start down to its first hit
    keeps every hit of it: the lines it skips hold none.
    `blank_runs_as_one`: a notebook's chunk (`_shown_lines`); its snippet's lines are then not
    the file's consecutive lines, only its first is at `line`."""
    lines = text.split("\n")
    lowered = [line.lower() for line in lines]
    forms = stem_forms(words)
    hits = [sum(1 for form in forms if form in line) for line in lowered]
    headers = {h.strip().lower() for h in signatures.split("\n") if h.strip()}
    heads = {line - start_line for _, line in definitions if 0 <= line - start_line < len(lines)}
    defining = _named_definition(definitions, start_line, len(lines), words)
    if defining is None:
        defining = _defining_line(lowered, words, headers)
    if defining is not None:
        defining = _type_signature_above(lowered, defining)
        defining = _head_start(lowered, defining, headers)
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
            above = [i for i in range(window_start, best_start)
                     if i in heads or lowered[i].strip() in headers]
            if above:
                above[-1] = _head_start(lowered, above[-1], headers)
            best_start = above[-1] if above else best_start
    while best_start > 0 and lines[best_start - 1].lstrip().startswith(LEAD_IN):
        best_start -= 1
    if defining is None:
        best_start = max(best_start, window_start)
    while best_start < len(lines) - 1 and not lines[best_start].strip():
        best_start += 1
    if blank_runs_as_one:
        window = _shown_lines(lines[best_start:], max_lines)
    else:
        window = lines[best_start : best_start + max_lines]
        while window and not window[-1].strip():
            window.pop()
    snippet = "\n".join(window)
    if len(snippet) > SNIPPET_CHARS:
        snippet = snippet[: SNIPPET_CHARS - 1].rstrip() + "…"
    return start_line + best_start, snippet


def _shown_lines(lines: list[str], max_lines: int) -> list[str]:
    """Up to `max_lines` lines from the first, a run of blank lines shown (and counted) as one:
    a notebook's view leaves its JSON lines (cell keys, outputs) blank, and a window of file
    lines showed two lines of a cell and then nine blank ones (ingest/notebook.py)."""
    shown: list[str] = []
    for line in lines:
        if len(shown) == max_lines:
            break
        if line.strip():
            shown.append(line)
        elif shown and shown[-1]:
            shown.append("")
    while shown and not shown[-1]:
        shown.pop()
    return shown


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


def _named_definition(
    definitions: Sequence[tuple[str, int]], start_line: int, count: int, words: list[str]
) -> int | None:
    """The chunk's row of its first definition of the earliest query word that it defines: the
    name as a whole (`close`, not `call_on_close`), or its last part when qualified (`M.setup`,
    `Foo::bar`). Earliest: `uv_timer_start`'s words are itself, `timer`, `start`, and a chunk
    defining `start` above `uv_timer_start` is shown from the latter. Else its first definition
    of a compound name whose every part the question says (scoring's `name_words` rule): "how
    zls generates diagnostic errors" is shown from `pub fn generateDiagnostics(`, not from the
    densest lines of its body."""
    order = {word: i for i, word in reversed(list(enumerate(words)))}
    best: tuple[int, int] | None = None
    compound: int | None = None
    matching = WordsMatching(words)
    for name, line in definitions:
        row = line - start_line
        if not 0 <= row < count:
            continue
        last_part = re.split(r"[.:]+", name)[-1]
        rank = min(order.get(name.lower(), len(words)), order.get(last_part.lower(), len(words)))
        if rank < len(words) and (best is None or (rank, row) < best):
            best = (rank, row)
        parts = name_parts(last_part)
        if len(parts) >= 2 and all(matching.says(part) for part in parts):
            compound = row if compound is None else min(compound, row)
    return compound if best is None else best[1]


SIGNATURE_REACH = 6  # rows above an equation searched for its type signature


def _type_signature_above(lowered: list[str], row: int) -> int:
    """The row of the type signature of the equation on ROW (`name :: Type` above `name x = ...`:
    Haskell, PureScript, Idris; the signature may run over several lines), else ROW. The parser
    names the equation, so a hit began below the line that says what the function is."""
    named = re.match(r"\s*([a-z_][\w']*)", lowered[row])
    if named is None:
        return row
    signature = re.compile(r"\s*" + re.escape(named.group(1)) + r"\s*::")
    for above in range(row - 1, max(-1, row - 1 - SIGNATURE_REACH), -1):
        line = lowered[above]
        if not line.strip():
            break
        if signature.match(line):
            return above
        if not line[0].isspace() and not line.startswith("--"):  # another top-level line
            break
    return row


def _normalised(text: str) -> str:
    """Lines joined as the chunker joins a signature's (ingest/chunk_code.py `signature`)."""
    joined = " ".join(text.split())
    return re.sub(r"\s+\)", ")", re.sub(r"\(\s+", "(", joined))


def _head_start(lowered: list[str], row: int, headers: set[str], reach: int = 3) -> int:
    """The first row of the head whose name is on ROW: up to REACH rows above it when they and
    ROW begin one header of the chunk (`static int` over `foo(int a) {` begins `static int
    foo(int a)`; a previous definition's one-line head and ROW begin none); ROW otherwise."""
    start = row
    for above in range(row - 1, max(-1, row - 1 - reach), -1):
        if not lowered[above].strip():
            break
        joined = _normalised(" ".join(lowered[above : row + 1])).rstrip("{").rstrip()
        if any(h.startswith(joined) or (h.endswith("...") and joined.startswith(h[:-3])) for h in headers):
            start = above
    return start
