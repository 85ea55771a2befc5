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


def test_views_cap_the_own_hits_or_keep_only_the_lexical_candidates() -> None:
    matrix = np.asarray([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    vectors = static_tier.MemoryVectors("fp", np.asarray([10, 11, 12, 13]), np.asarray([1, 1, 1, 2]), matrix)
    assert [c for c, _ in vectors.search([1.0, 0.0], [1, 2], 5, within={12, 13})] == [12, 13]
    assert [c for c, _ in static_tier.VectorView(vectors, top=2).search([1.0, 0.0], [1, 2], 100)] == [10, 11]
    rescore = static_tier.VectorView(vectors, within={11, 13})
    assert [c for c, _ in rescore.search([1.0, 0.0], [1], 100)] == [11]
    assert rescore.active_model() == ("fp", 2, "float") and rescore.pending_count() == 0


def test_frequent_tokens_weigh_less_under_idf_and_sif() -> None:
    chunks = [[0, 1, 1], [0, 2], [0, 3]]  # token 0 in every chunk, token 1 twice in one
    idf = static_tier.token_weights("idf", chunks, 5)
    sif = static_tier.token_weights("sif", chunks, 5)
    assert idf[0] < idf[1] == idf[2] and idf[4] == idf.max()
    assert sif[0] < sif[1] < sif[2] < sif[4] <= 1.0
    np.testing.assert_array_equal(static_tier.token_weights("none", chunks, 5), np.ones(5))


def test_first_component_is_the_shared_direction() -> None:
    rng = np.random.default_rng(0)
    shared = np.asarray([0.6, 0.8, 0.0], dtype=np.float32)
    matrix = 3.0 * shared + 0.1 * rng.standard_normal((50, 3)).astype(np.float32)
    assert abs(float(static_tier.first_component(matrix) @ shared)) > 0.99


def test_bad_variants_and_fusions_are_refused_with_one_line(tmp_path, capsys) -> None:
    assert static_tier.valid_variant("code-p2-n2-cap128/sif-pc/128")
    assert static_tier.valid_variant("parts/idf")
    for bad in ("code/idf/x", "code-p/idf", "parts/idf-pca", "raw", "raw/idf/128/1"):
        assert not static_tier.valid_variant(bad), bad
    assert static_tier.main(["--home", str(tmp_path), "--variants", "code/idf", "--fusion", "add,top5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--fusion" in err
