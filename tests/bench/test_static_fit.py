"""bench/static_fit.py: the pooling matrix is the tier's field-weighted mean, and the fit moves
the table toward the deep vectors of chunks it has not seen (a planted table is found again);
bench/static_learn.py's own parts: the product case's first share, the complement figures, and
its refusals of bad arguments."""

from __future__ import annotations

import numpy as np

from bench.static_fit import fit_table, mean_cosine, pooled, pooling_matrix
from bench.static_learn import Group, complement_line, first_share, main

N_TOKENS, DIMS = 60, 8


def random_chunks(rng: np.random.Generator, n: int, used: int) -> list[list[list[int]]]:
    """n chunks of three fields (path, names, body) over the first `used` token ids."""
    return [[list(rng.integers(0, used, size=rng.integers(lo, hi))) for lo, hi in ((1, 4), (0, 3), (5, 30))]
            for _ in range(n)]


def test_pooling_is_the_weighted_sum_of_field_means_times_token_weights() -> None:
    rng = np.random.default_rng(1)
    table = rng.normal(size=(N_TOKENS, DIMS)).astype(np.float32)
    weights = rng.uniform(0.5, 3.0, size=N_TOKENS).astype(np.float32)
    chunks = [[[3, 3, 7], [], [1, 2, 3, 4]], [[5], [5, 9], [11]]]
    got = np.asarray(pooling_matrix(chunks, (2.0, 1.5, 1.0), weights) @ table)
    weighted = table * weights[:, None]
    expected = np.stack([
        2.0 * weighted[[3, 3, 7]].mean(axis=0) + 1.0 * weighted[[1, 2, 3, 4]].mean(axis=0),
        2.0 * weighted[[5]].mean(axis=0) + 1.5 * weighted[[5, 9]].mean(axis=0) + weighted[[11]].mean(axis=0),
    ])
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    unit = pooled(pooling_matrix(chunks, (2.0, 1.5, 1.0), weights), table)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-5)


def test_fit_finds_a_planted_table_on_held_out_chunks_and_leaves_unused_tokens() -> None:
    rng = np.random.default_rng(7)
    planted = rng.normal(size=(N_TOKENS, DIMS))
    start = rng.normal(size=(N_TOKENS, DIMS)).astype(np.float32)  # a table that knows nothing
    weights = np.ones(N_TOKENS, dtype=np.float32)
    used = 40  # tokens 40..59 appear in no chunk
    train, held = random_chunks(rng, 600, used), random_chunks(rng, 100, used)

    def targets(chunks: list[list[list[int]]]) -> np.ndarray:
        return pooled(pooling_matrix(chunks, (1.0, 1.0, 1.0), weights), planted)

    a_train = pooling_matrix(train, (1.0, 1.0, 1.0), weights)
    a_held = pooling_matrix(held, (1.0, 1.0, 1.0), weights)
    before = mean_cosine(a_held, start, targets(held))
    tables = {lam: fit_table(a_train, targets(train), start, lam, max_steps=200)[0]
              for lam in (1e-3, 1.0, 100.0)}
    after = {lam: mean_cosine(a_held, table, targets(held)) for lam, table in tables.items()}
    assert before < 0.5 < 0.95 < after[1e-3]
    assert after[1e-3] > after[100.0] > before  # a strong pull to the start table fits less
    moved = {lam: float(np.linalg.norm(table - start)) for lam, table in tables.items()}
    assert moved[1e-3] > moved[1.0] > moved[100.0] > 0
    for table in tables.values():
        np.testing.assert_array_equal(table[used:], start[used:])


def test_first_share_takes_each_collections_first_chunks_by_id() -> None:
    group = Group("g", home=None, rows=[], targets={})  # type: ignore[arg-type]
    group.ids = np.array([50, 10, 30, 20, 40, 11, 12, 13, 14, 15])
    group.collections = np.array([1, 1, 1, 1, 1, 2, 2, 2, 2, 2])
    picked = set(first_share(group, 0.4).tolist())
    assert {int(group.ids[i]) for i in picked} == {10, 20, 11, 12}
    assert {int(group.ids[i]) for i in first_share(group, 0.01)} == {10, 11}  # at least one each


def test_complement_counts_the_questions_a_list_wins_over_lexical() -> None:
    lexical = [{"ndcg@10": v} for v in (1.0, 0.5, 0.0, 0.2)]
    other = [{"ndcg@10": v} for v in (0.5, 1.0, 0.6, 0.2)]
    line = complement_line("alone x", other, lexical)
    assert "better than lexical on   2 questions" in line
    assert "(+0.275 NDCG@10 a question)" in line  # (0.5 + 0.6) / 4


def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys) -> None:
    table = tmp_path / "vocab.npy"
    np.save(table, np.zeros((3, 2), dtype=np.float32))
    assert main(["--home", f"a={tmp_path}", "--table", str(table)]) == 2
    assert "at least two" in capsys.readouterr().err
    missing = str(tmp_path / "none.npy")
    assert main(["--home", f"a={tmp_path}", "--home", f"b={tmp_path}", "--table", missing]) == 2
    assert "no such file" in capsys.readouterr().err
