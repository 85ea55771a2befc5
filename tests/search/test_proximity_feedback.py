"""Term proximity and pseudo-relevance feedback (issue 11, docs/ranking.md "Term proximity and
pseudo-relevance feedback"): the distance measure, the feedback words, and their lists in a search
over real files."""

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search.lexical import LexicalHit, lexical_search
from qmd_daemon.search.pipeline import SearchOptions, SearchTrace
from qmd_daemon.search.proximity import min_distance, question_units
from qmd_daemon.search.query import ParsedQuery, parse_query
from qmd_daemon.search.scoring import ScoringWeights
from qmd_daemon.search.term_feedback import (
    feedback_rescore,
    feedback_terms,
    holds_word,
    is_feedback_question,
    lower_in_place,
)
from tests.conftest import indexed


def test_question_units_keep_a_compound_whole() -> None:
    assert question_units(parse_query("how does ClientSession retry a request")) == [
        ("client", "session"), ("retry",), ("request",)]


def test_min_distance_is_between_distinct_units_only() -> None:
    tokens = "retry retry x x x timeout client session y retry".split()
    units = [("retry",), ("timeout",), ("client", "session")]
    assert min_distance(tokens, units) == 1  # `timeout` then `client session`, adjacent
    assert min_distance(tokens, [("retry",), ("timeout",)]) == 4  # positions 1 and 5, 5 and 9
    assert min_distance("retry retry retry".split(), [("retry",), ("timeout",)]) is None
    # a compound's parts apart are not the compound
    assert min_distance("client x session timeout".split(), [("client", "session"), ("timeout",)]) is None


def test_feedback_is_for_questions_of_two_to_ten_terms() -> None:
    """One word names what it wants; eleven or more is a short bug report, whose first hits'
    words are its own again (feedback lost reports from the top 5, docs/ranking.md)."""
    assert not is_feedback_question(parse_query("mutate"))
    assert is_feedback_question(parse_query("how are failed requests retried with backoff"))
    report = ("TypeError when merging datasets with conflicting attrs: combine_attrs override drops "
              "units, then to_netcdf raises ValueError on encoding")
    assert len({t.lower() for t in parse_query(report).terms}) > 10
    assert not parse_query(report).is_long and not is_feedback_question(parse_query(report))


RETRY_FAR = "def schedule_jobs(queue):\n    \"\"\"Retry the queue; retry it again; retry.\"\"\"\n" + "".join(
    f"    step_{i} = queue.pop()  # move job {i} along\n" for i in range(30)
) + "    return queue.timeout  # the queue's timeout\n"
RETRY_NEAR = ("def send_with_deadline(request):\n    \"\"\"Send once and give up past the deadline.\"\"\"\n"
              + "".join(f"    part_{i} = request.body[{i}]  # copy part {i}\n" for i in range(30))
              + "    return request.retry_timeout  # retry timeout\n")


def test_proximity_puts_the_chunk_saying_the_words_together_first(engine: Engine, tmp_path: Path) -> None:
    name = indexed(engine, tmp_path / "repo", {"jobs.py": RETRY_FAR, "send.py": RETRY_NEAR})
    question = "retry timeout"

    def first(weights: ScoringWeights) -> str:
        options = SearchOptions(vectors=False, weights=weights, max_tokens=None)
        return engine.search(question, collections=[name], limit=5, options=options)[0].path

    assert first(ScoringWeights()) == "jobs.py"  # BM25: "retry" three times
    assert first(ScoringWeights(proximity=0.5, proximity_scale=3)) == "send.py"


BACKOFF = ("def backoff_delay(attempt):\n    \"\"\"Seconds to wait before the next attempt.\"\"\"\n"
           "    return min(jitter(attempt) * 2 ** attempt, max_backoff)\n")
CLIENT = "".join(
    f"def fetch_{i}(url):\n    \"\"\"Retry failed requests to {i}.\"\"\"\n"
    f"    for attempt in range(max_retries):\n        wait(backoff_delay(attempt))\n\n"
    for i in range(4)
)
# the rest of the repository: words common here are not worth feeding back (idf over the collection)
OTHERS = {f"mod_{i}.py": f"def render_{i}(page):\n    \"\"\"Render page {i}.\"\"\"\n    return page.html\n"
          for i in range(12)}


def _retry_question(engine: Engine, tmp_path: Path) -> tuple[str, list[int], ParsedQuery, list[LexicalHit]]:
    """The client/backoff repository indexed, and lexical's hits for "retry failed requests"."""
    name = indexed(engine, tmp_path / "repo", {"client.py": CLIENT, "backoff.py": BACKOFF, **OTHERS})
    ids = engine.collection_ids([name])
    parsed = parse_query("retry failed requests")
    return name, ids, parsed, lexical_search(engine.store, parsed, ids)


def test_feedback_words_are_what_the_first_hits_share_beyond_the_question(
    engine: Engine, tmp_path: Path
) -> None:
    name, ids, parsed, hits = _retry_question(engine, tmp_path)
    words = feedback_terms(engine.store, parsed, hits, ids, chunks=3, terms=5)
    assert {"attempt", "max_retries"} <= set(words)
    assert not {"retry", "failed", "requests"} & set(words)
    trace = SearchTrace()
    options = SearchOptions(vectors=False, prf_chunks=3, prf_terms=5, max_tokens=None, prf_rescore=False)
    found = engine.search("retry failed requests", collections=[name], options=options, trace=trace)
    assert trace.lists.get("bm25:prf", 0) > 0
    assert "backoff.py" in {h.path for h in found}  # says none of the question's words: the second query
    symbol = SearchTrace()
    engine.search("backoff_delay", collections=[name], options=options, trace=symbol)
    assert "bm25:prf" not in symbol.lists  # not for a symbol query


# The first hits of "retry failed requests" share `backoff`, `attempt`, `jitter`: the chunk that
# says them too comes first with feedback; BM25 alone puts a short page saying the words first
# (its other words are the repository's commonest: nothing to feed back).
NOTE = '''def render(page):
    """Retry failed requests: render page html."""
    return page.html
'''
RETRIER = '''def drain(attempt):
    """Retry failed requests with backoff, jitter per attempt."""
    wait(backoff(attempt) + jitter(attempt))
'''
HELPERS = {
    f"helper_{i}.py": f'''def helper_{i}(attempt):
    """Backoff {i} before a retry: wait per attempt, with jitter, to render the page html of a page."""
    page = render(page)
    return backoff(attempt) * jitter(attempt)
''' for i in range(3)
}


@pytest.mark.parametrize("rescore", [False, True], ids=["second query", "lexical's candidates re-scored"])
def test_feedback_puts_the_chunk_sharing_the_first_hits_words_first(
    engine: Engine, tmp_path: Path, rescore: bool
) -> None:
    name = indexed(engine, tmp_path / "repo", {"notes.py": NOTE, "retrier.py": RETRIER, **HELPERS,
                                               **OTHERS})

    def first(options: SearchOptions) -> str:
        return engine.search("retry failed requests", collections=[name], limit=5, options=options)[0].path

    assert first(SearchOptions(vectors=False, max_tokens=None, prf_chunks=0)) == "notes.py"
    default_feedback = SearchOptions(vectors=False, max_tokens=None, prf_rescore=rescore)
    assert first(default_feedback) == "retrier.py"


def test_rescored_feedback_orders_lexical_candidates_by_the_idf_of_the_words_they_hold(
    engine: Engine, tmp_path: Path
) -> None:
    _name, ids, _parsed, hits = _retry_question(engine, tmp_path)
    candidates = [h.chunk_id for h in hits]
    rows = engine.store.chunks_by_ids(candidates)
    scored = dict(feedback_rescore(engine.store, ["attempt", "jitter", "render"], ids, rows))
    assert scored and set(scored) <= set(candidates)  # no chunk lexical did not find
    # backoff.py holds `attempt` and `jitter` but none of the question's words: no candidate, never
    # scored; `render` (12 of 14 files) has an idf below zero and scores nothing
    assert {rows[c].path for c in scored} == {"client.py"}
    assert feedback_rescore(engine.store, [], ids, rows) == []


@pytest.mark.parametrize(
    ("text", "word", "held"),
    [
        ("for attempt in range(max_retries):", "retries", True),  # a part after `_`
        ("for attempt in range(max_retries):", "max_retries", True),  # the whole token
        ("self.maxRetries = 3", "retries", True),  # a camelCase part
        ("self.maxRetries = 3", "maxretries", True),  # the whole identifier, lowercased
        ("class HTTPServer:", "server", True),
        ("class HTTPServer:", "http", True),
        ("def start(self):", "art", False),  # inside a word, not a part of it
        ("def restart(self):", "start", False),
        ("RETRY_LIMIT = 5", "retry", True),
        ("int32 value", "int", True),  # digits split a part off, as split_identifier does
        ("parse the config file", "config", True),
        ("configuration", "config", False),
        ("", "config", False),
    ],
)
def test_a_feedback_word_is_held_as_a_word_or_a_part_of_one(text: str, word: str, held: bool) -> None:
    assert holds_word(text, lower_in_place(text), word) is held


def test_a_letter_that_lowercases_to_two_moves_no_match() -> None:
    # `İ`.lower() is two characters: matched in str.lower's text, `x` sat past the end (IndexError)
    text = "İİİİİİİİ x = maxRetries"
    lowered = lower_in_place(text)
    assert len(lowered) == len(text)
    assert holds_word(text, lowered, "x") and holds_word(text, lowered, "retries")
    assert not holds_word(text, lowered, "axretries")
