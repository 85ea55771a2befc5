"""bench/static_tier.py plumbing: the in-memory vector list the pipeline searches, and bad flags."""

from __future__ import annotations

import numpy as np

from bench import static_tier


def test_memory_vectors_search_only_the_asked_collections_best_first() -> None:
    matrix = np.asarray([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    vectors = static_tier.MemoryVectors("fp", np.asarray([10, 11, 12, 13]), np.asarray([1, 1, 2, 2]), matrix)
    assert vectors.active_model() == ("fp", 2, "float")
    assert [c for c, _ in vectors.search([1.0, 0.0], [1], 5)] == [10, 11]
    assert [c for c, _ in vectors.search([1.0, 0.0], [2], 1)] == [13]
    assert [c for c, _ in vectors.search([0.0, 1.0], [1, 2], 2)] == [12, 13]


def test_unknown_variant_is_refused_with_one_line(tmp_path, capsys) -> None:
    assert static_tier.main(["--home", str(tmp_path), "--variants", "parts/bogus"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "analysis/weighting" in err
