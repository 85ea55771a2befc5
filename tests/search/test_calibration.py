from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.search.calibration import probability
from qmd_daemon.search.pipeline import SearchOptions
from tests.conftest import SAMPLE_GO, SAMPLE_MD, SAMPLE_PY, write_tree


def test_probability_rises_with_each_kind_of_evidence() -> None:
    base = {"relative": 0.5, "coverage": 0.5, "similarity": 0.3, "no_vectors": 0.0}
    for feature in ("relative", "coverage", "similarity"):
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
        options=SearchOptions(per_file=0, min_score=scores[1]),
    )
    assert [h.score for h in above] == scores[: len(above)] and len(above) < len(scores)
