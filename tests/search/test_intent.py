"""`intent:` steers what a hit shows and how the reranker judges it, never what BM25 matches:
the same hits come back, and the snippet is the window about the intent (a real index)."""

from __future__ import annotations

from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchOptions
from qmd_daemon.search.query import parse_query
from tests.conftest import indexed

# One function, one chunk: cookie parsing at the top, cookie expiry near the end (more than a
# snippet window, 12 lines, apart).
JAR = "\n".join(
    [
        "def load_jar(raw):",
        "    cookie = parse_cookie(raw)",
        "    cookie_name = cookie.name.strip()",
        *[f"    step_{i} = normalise(step_{i - 1} if {i} else raw)" for i in range(16)],
        "    ttl = compute_ttl(raw)",
        "    expires_at = now() + ttl  # cookie expiry",
        "    if expires_at < now():",
        "        return drop_expired(expires_at)",
        "    return keep(expires_at)",
    ]
) + "\n"
QUESTION = "where is the cookie loaded"


def _first_hit(engine: Engine, name: str, query: str) -> tuple[list[str], int]:
    hits = engine.search(query, [name], options=SearchOptions(vectors=False))
    return [h.path for h in hits], hits[0].line


def test_intent_moves_the_snippet_not_the_match(engine: Engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "p", {"jar.py": JAR, "other.py": "def unrelated():\n    return 1\n"})
    plain_paths, plain_line = _first_hit(engine, name, QUESTION)
    steered_paths, steered_line = _first_hit(engine, name, f"{QUESTION}\nintent: expires expired ttl")
    assert plain_paths == steered_paths == ["jar.py"]  # BM25 matched the same: intent adds no term
    assert plain_line == 1  # the cookie lines at the top
    assert steered_line > 12  # the window about expiry, past the first snippet's lines


def test_the_reranker_reads_the_intent_after_the_question() -> None:
    parsed = parse_query(f"{QUESTION}\nintent: expiry handling")
    assert parsed.rerank_text == f"{QUESTION}\nIntent: expiry handling"
    assert "expiry" not in parsed.terms  # not a BM25 term
    assert parse_query(QUESTION).rerank_text == QUESTION
