"""bench/fusion_signals.py: the per-search signals its fusion rules read, at file level."""

from __future__ import annotations

from bench import fusion_signals
from bench.fusion_signals import Signals, ranked_files
from qmd_daemon.search.fusion import RankedList


def test_ranked_files_keep_each_files_best_chunk_in_score_order() -> None:
    # chunks 1, 2 of file 10; chunk 3 of file 20; chunk 4 unknown (deleted since): skipped
    ranked = RankedList("vec", [1, 2, 3, 4], [0.40, 0.70, 0.55, 0.90], "cosine")
    assert ranked_files(ranked, {1: 10, 2: 10, 3: 20}) == ([10, 20], [0.70, 0.55])


def test_agreement_counts_the_vector_lists_leading_files_lexical_leads_with() -> None:
    signals = Signals(lexical=[1, 2, 3, 4], lexical_scores=[8.0, 6.0, 2.0, 1.0],
                      vector=[3, 9, 1], vector_scores=[0.6, 0.5, 0.4], vector_mean=0.3)
    assert signals.agreement(3, 3) == 2 / 3  # files 3 and 1 of the vector list's 3
    assert signals.agreement(3, 1) == 1 / 3
    assert signals.margin() == 0.25  # 6 over 8
    assert signals.vector_first_support() == 0.25  # the vector list's first (3) has BM25 2 of 8
    assert round(signals.vector_span(), 6) == 0.3


def test_a_vector_first_file_without_the_questions_words_has_no_support() -> None:
    signals = Signals(lexical=[1], lexical_scores=[5.0], vector=[7], vector_scores=[0.5], vector_mean=0.4)
    assert signals.vector_first_support() == 0.0
    assert signals.margin() == 1.0  # a lone BM25 match
    assert fusion_signals.RULES["unsupported"](signals) == 0.5
    assert fusion_signals.RULES["signals"](signals) == 1.0


def test_each_shape_keeps_the_vector_lists_best_at_one_and_its_floor_at_zero() -> None:
    # with_shape hands the reshaped scores on as a list BM25's scale divides by its best: the
    # best must stay 1 for the vector weight to mean what it means in today's fusion
    for name, shape in fusion_signals.SHAPES.items():
        assert shape(1.0) == 1.0, name
        assert shape(0.0) == 0.0, name
        assert shape(0.5) < 0.5, name  # a middling chunk counts less than today
