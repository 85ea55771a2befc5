"""Query analysis costs about the same whatever an agent pastes: no regex backtracks over a long
word run, and past MAX_QUERY_CHARS only the head and the error lines are analysed."""

from __future__ import annotations

import base64
import os
import time

import pytest

from qmd_daemon.search.query import (
    MAX_EXCLUDES,
    MAX_PHRASES,
    MAX_QUERY_CHARS,
    MAX_TYPED_LINES,
    bounded_query,
    condense,
    parse_query,
)


def _seconds(text: str) -> float:
    """CPU seconds the analysis costs: this thread's CPU time, which a wait for a core on a loaded
    box (wall time) does not count."""
    started = time.thread_time()
    parse_query(text)
    condense(text)
    return time.thread_time() - started


def _report(chars: int) -> str:
    """An ordinary long bug report: prose, a traceback, paths, identifiers."""
    block = (
        "Saving a session fails after the cookie jar rotates its keys.\n"
        'Traceback (most recent call last):\n  File "src/app/session_store.py", line 88, in save\n'
        "    self._jar.rotate(key_id)\nKeyError: 'kid-7' while CookieJar.rotate ran\n"
    )
    return (block * (chars // len(block) + 1))[:chars]


@pytest.mark.parametrize(
    "name, blob",
    [
        ("200k word characters", "a" * 200_000),
        ("30k base64", base64.b64encode(os.urandom(22_500)).decode()),
        ("20k hex", os.urandom(10_000).hex()),
        ("900k word characters", "a" * 900_000),
        ("100k path characters", "a/" * 50_000),
        ("300k exclusions", " -ab" * 75_000),
        # `^\s*` in the report reader's line patterns crossed newlines: 31k blank lines took 100 s
        ("31k newlines", "why does load fail" + "\n" * 31_000 + "x"),
        ("15k blank lines", " \n" * 15_500),
        ("long error lines", ("ValueError: " + "ab - " * 3_000 + "\n") * 10),
        ("unclosed fences", "".join("`" * n + "\nx\n" for n in range(400, 2, -1))),
    ],
)
def test_pathological_queries_cost_what_an_ordinary_one_does(name: str, blob: str) -> None:
    # the old `_PATH` took 6 s on 'a'*20000 (quadratic, holding the GIL); the exclusions were
    # spliced out of the text one copy each (quadratic too)
    ordinary = min(_seconds(_report(MAX_QUERY_CHARS)) for _ in range(3))
    short = min(_seconds("how are cookies parsed") for _ in range(3))
    took = _seconds(blob)
    print(f"{name}: {took * 1000:.1f} CPU ms; a {MAX_QUERY_CHARS}-character report {ordinary * 1000:.1f} "
          f"CPU ms; short {short * 1000:.3f} CPU ms")
    assert took < 2.0
    assert took < 20 * ordinary + 0.05  # linear: about what the analysed head costs


def test_a_long_report_keeps_its_head_and_the_error_lines_of_its_tail() -> None:
    noise = "INFO request served in 3 ms\n" * 40_000
    text = "Uploads hang on large files\n" + noise + "ValueError: chunk size exceeds limit in upload_chunk\n"
    kept = bounded_query(text)
    assert len(kept) <= MAX_QUERY_CHARS
    assert kept.startswith("Uploads hang on large files\n")
    assert kept.endswith("ValueError: chunk size exceeds limit in upload_chunk")
    parsed = parse_query(text)
    assert "upload_chunk" in parsed.terms
    assert "ValueError: chunk size exceeds limit" in parsed.model_text
    assert parsed.model_text.startswith("Uploads hang on large files")
    assert bounded_query("short question") == "short question"


def test_paths_are_found_as_before() -> None:
    text = "x" * 700 + "\nsee src/app/main.py:12, lib\\util\\io.rs and ./a.b/c.tar.gz; not a/b or .py"
    anchors = condense(text).splitlines()[-1].split()
    assert anchors[:3] == ["src/app/main.py", "lib\\util\\io.rs", "./a.b/c.tar.gz"]


def test_repeated_syntax_is_capped() -> None:
    typed = "\n".join(f"{kind}: line {i}" for kind in ("lex", "vec", "hyde") for i in range(50))
    parsed = parse_query(typed + "\nplain words")
    assert len(parsed.lex) == len(parsed.vec) == len(parsed.hyde) == MAX_TYPED_LINES
    parsed = parse_query(" ".join(f'"phrase {i}" -skip{i}' for i in range(100)) + " keep")
    assert len(parsed.phrases) == MAX_PHRASES and len(parsed.excludes) == MAX_EXCLUDES
    assert parsed.terms == ["keep"]  # every exclusion is still taken out of the words
