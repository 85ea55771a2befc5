"""From ranked chunks to hits an agent can use: per-file cap, snippet, related files, token budget."""

from __future__ import annotations

from collections.abc import Callable

from qmd_daemon.file_types import is_notebook
from qmd_daemon.search.calibration import features, probability
from qmd_daemon.search.candidates import Candidate
from qmd_daemon.search.hit import Hit
from qmd_daemon.search.snippets import best_window

CHARS_PER_TOKEN = 4
RESULT_OVERHEAD_TOKENS = 30


def shape_hits(
    ranked: list[Candidate],
    words: list[str],
    question_idf: float,
    *,
    limit: int,
    per_file: int,
    max_tokens: int | None,
    min_score: float,
    related_of: Callable[[list[int]], dict[int, list[str]]],
    explain: bool,
    definitions_of: Callable[[list[int]], dict[int, list[tuple[str, int]]]] | None = None,
) -> list[Hit]:
    """`related_of`: file ids -> the files related to each (the store's `related_paths`), asked
    once for the files of the hits returned: a code file can be cited by ~1,000 doc chunks, and
    a question's 30 leading candidates' files cost 2-3 ms at 503k chunks against ~1 for its hits'.
    `definitions_of`: chunk ids -> (name, line) of their definitions (the store's
    `definitions_in`), asked once for the chunks that can become hits: a hit on a definition of a
    query word starts at its head, wherever its words are densest (search/snippets.py)."""
    hits: list[Hit] = []
    hit_files: list[int] = []
    budget = max_tokens if max_tokens and max_tokens > 0 else None
    used = 0
    top = max((c.score for c in ranked), default=0.0)
    reachable = _reachable(ranked, limit, per_file)
    definitions = definitions_of([c.chunk.id for c in reachable]) if definitions_of is not None else {}
    ceiling = 1.0  # scores never rise down the list, so a threshold cuts a prefix
    for cand in reachable:  # the hits are a prefix of them: the floor and the budget end it sooner
        chunk = cand.chunk
        values = features(cand, top, question_idf)
        score = round(min(ceiling, probability(values)), 4)
        if score < min_score:
            break
        # a chunk's text is its file lines, but for the source lines of a notebook written on one
        # line (ingest/notebook.py): their definitions and window are all at that one line
        in_one_line = chunk.start_line == chunk.end_line and "\n" in chunk.text
        at_lines = () if in_one_line else definitions.get(chunk.id, ())
        line, snippet = best_window(chunk.text, chunk.start_line, words, signatures=chunk.signature,
                                    definitions=at_lines, blank_runs_as_one=is_notebook(chunk.path))
        line = chunk.start_line if in_one_line else line
        # the definition the snippet starts at, when it starts at one: a chunk can hold several
        # (Go's `MergeInConfig` then `ReadConfig`), and a hit on the second was named the first
        first = chunk.symbols.split(" ")[0] if chunk.symbols else ""
        symbol = next((name for name, at in at_lines if at == line), first)
        cost = RESULT_OVERHEAD_TOKENS + len(snippet) // CHARS_PER_TOKEN
        if budget is not None and used + cost > budget and hits:
            break
        used += cost
        ceiling = score
        hit = Hit(
            path=chunk.path,
            line=line,
            end_line=chunk.end_line,
            score=score,
            snippet=snippet,
            collection=chunk.collection,
            symbol=symbol,
            kind=chunk.kind,
        )
        if explain:
            hit.explain = {
                "chunk_lines": [chunk.start_line, chunk.end_line],
                "ranks": dict(cand.ranks),
                "boosts": dict(cand.boosts),
                "raw_score": round(cand.score, 4),
                "features": {k: round(v, 4) for k, v in values.items()},
            }
        hits.append(hit)
        hit_files.append(chunk.file_id)
    related = related_of(list(dict.fromkeys(hit_files))) if hits else {}
    for hit, file_id in zip(hits, hit_files, strict=True):
        hit.related = related.get(file_id, [])[:5]
    return hits


def _reachable(ranked: list[Candidate], limit: int, per_file: int) -> list[Candidate]:
    """The candidates shape_hits can return: the first LIMIT within the per-file cap (the score
    floor and the token budget only end the list sooner)."""
    out: list[Candidate] = []
    per_file_count: dict[tuple[str, str], int] = {}
    for cand in ranked:
        if len(out) >= limit:
            break
        key = (cand.chunk.collection, cand.chunk.path)
        if per_file and per_file_count.get(key, 0) >= per_file:
            continue
        per_file_count[key] = per_file_count.get(key, 0) + 1
        out.append(cand)
    return out
