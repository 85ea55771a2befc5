from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.search.calibration import ANSWER_THRESHOLD, probability
from qmd_daemon.search.pipeline import SearchOptions, SearchTrace
from tests.conftest import SAMPLE_GO, SAMPLE_MD, SAMPLE_PY, write_tree


def test_probability_rises_with_each_kind_of_evidence() -> None:
    base = {"relative": 0.5, "answered": 0.5, "similarity": 0.3, "no_vectors": 0.0}
    for feature in ("relative", "answered", "similarity"):
        assert probability({**base, feature: base[feature] + 0.3}) > probability(base)
    assert 0.0 < probability(base) < 1.0


def test_scores_are_in_unit_range_and_never_rise_down_the_list(engine: Engine, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "p", {"client.py": SAMPLE_PY, "conn.go": SAMPLE_GO, "README.md": SAMPLE_MD})
    name = engine.add_collection(root).name
    engine.update([name])
    hits = engine.search(
        "cookie header session connection", [name], limit=10, options=SearchOptions(per_file=0)
    )
    scores = [h.score for h in hits]
    assert len(scores) >= 3 and all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    above = engine.search(
        "cookie header session connection",
        [name],
        limit=10,
        options=SearchOptions(per_file=0, min_score=scores[0]),  # the best only (or its ties)
    )
    assert [h.score for h in above] == scores[: len(above)] and len(above) < len(scores)


NOTHING_HERE = ("xyzzy plugh frobozz", "how do I bake sourdough bread")


def test_a_question_with_no_answer_scores_under_the_threshold(small_engine: Engine, tmp_path: Path) -> None:
    """Issue 13: nonsense scored 0.505, like a real answer (the best hit of any query was ~0.5).
    With vectors (real MiniLM through llama.cpp) every query has nearest chunks; their score must
    still say "nothing here", while a real question's best hit clears the threshold."""
    files = {"client.py": SAMPLE_PY, "conn.go": SAMPLE_GO, "README.md": SAMPLE_MD}
    files |= {f"util{i}.py": f"def format_row_{i}(row):\n    return ', '.join(row)\n" for i in range(6)}
    name = small_engine.add_collection(write_tree(tmp_path / "p", files)).name
    small_engine.update([name])
    small_engine.embed([name])
    trace = SearchTrace()
    answer = small_engine.search("parse the cookie header", [name], trace=trace)
    assert trace.mode == "hybrid" and answer[0].path == "client.py"
    assert answer[0].score >= ANSWER_THRESHOLD
    for query in NOTHING_HERE:
        hits = small_engine.search(query, [name])
        assert hits, "vectors always find neighbours: the score has to say they are not answers"
        assert hits[0].score < ANSWER_THRESHOLD, (query, hits[0])


def test_question_weight_follows_the_index(engine: Engine, tmp_path: Path) -> None:
    """Document frequencies are kept between searches; a change to the index must reach them."""
    from qmd_daemon.search.lexical import question_idf
    from qmd_daemon.search.query import parse_query

    root = write_tree(tmp_path / "p", {"client.py": SAMPLE_PY, "conn.go": SAMPLE_GO, "README.md": SAMPLE_MD})
    name = engine.add_collection(root).name
    engine.update([name])
    ids = engine.collection_ids([name])
    parsed = parse_query("zebra cookie")
    unknown = question_idf(engine.store, parsed, ids)
    assert question_idf(engine.store, parsed, ids) == unknown
    (root / "zoo.py").write_text("def feed_zebra():\n    return 'hay'\n")
    engine.update([name])
    assert question_idf(engine.store, parsed, ids) < unknown, "zebra is in the index now"
