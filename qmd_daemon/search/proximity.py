"""Term proximity (Tao & Zhai 2007, "An exploration of proximity measures in information
retrieval"): a chunk where two of the question's words stand close together is more likely about
what the question joins them for than one that says each in a different function. Their best
measure, MinDist, is the least distance between two distinct query terms in the document."""

from __future__ import annotations

import math
from collections.abc import Iterable

from qmd_daemon.search.candidates import Candidate
from qmd_daemon.search.query import ParsedQuery
from qmd_daemon.text.code_words import code_words

PROXIMITY_CHECKED = 50  # leading candidates whose text is read: those that could reach the page


def question_units(parsed: ParsedQuery) -> list[tuple[str, ...]]:
    """The question's distinct terms, each as its code words (`ClientSession` -> client, session):
    a compound must stand whole in the chunk, and its own parts are never "close to each other"."""
    units = (tuple(code_words(term).split()) for term in parsed.terms)
    return list(dict.fromkeys(unit for unit in units if unit))


def min_distance(tokens: list[str], units: list[tuple[str, ...]]) -> int | None:
    """The fewest tokens from the end of one unit to the start of another (1: adjacent) in
    `tokens`, over pairs of distinct units; None when fewer than two of them occur."""
    starts: dict[str, list[int]] = {}
    for position, token in enumerate(tokens):
        starts.setdefault(token, []).append(position)
    found: list[tuple[int, int, int]] = []  # (start, end, unit index)
    for index, unit in enumerate(units):
        for start in starts.get(unit[0], ()):
            if tuple(tokens[start : start + len(unit)]) == unit:
                found.append((start, start + len(unit) - 1, index))
    found.sort()
    gaps = (b[0] - a[1] for a, b in zip(found, found[1:], strict=False) if a[2] != b[2])
    return min(gaps, default=None)


def proximity_boost(cands: Iterable[Candidate], parsed: ParsedQuery, top: float, weight: float,
                    scale: float) -> None:
    """+weight x top x exp(-(d - 1) / scale) for the leading candidates, d their MinDist in code
    words. Only for a question of two or more distinct terms: a symbol query has one name, and a
    bug report's 40 terms are next to each other in any long function."""
    if weight == 0 or parsed.is_symbol_query or parsed.is_long:
        return  # off by default: no work on the search path
    units = question_units(parsed)
    if len(units) < 2:
        return
    for cand in sorted(cands, key=lambda c: -c.score)[:PROXIMITY_CHECKED]:
        distance = min_distance(code_words(cand.chunk.text).split(), units)
        if distance is not None:
            cand.add("proximity", weight * top * math.exp(-(max(distance, 1) - 1) / scale))
