"""bench/pg_store_parity.py: what counts as two backends answering a store call differently."""

from __future__ import annotations

from pathlib import Path

from bench.pg_store_parity import Recorder, differing
from qmd_daemon.store.index_store import IndexStore


def _call(answer: object, name: str = "chunks_defining", args: tuple = (["x"], [1])) -> tuple:
    return (name, args, {}, answer)


def test_lists_differ_by_order_sets_and_dicts_do_not_floats_to_seven_digits() -> None:
    assert differing([_call([1, 2])], [_call([2, 1])]) != []
    assert differing([_call({1, 2})], [_call({2, 1})]) == []
    assert differing([_call({1: [3, 4], 2: []})], [_call({2: [], 1: [3, 4]})]) == []
    assert differing([_call({1: [3, 4]})], [_call({1: [4, 3]})]) != []
    assert differing([_call([(7, 1.0000000001)])], [_call([(7, 1.0)])]) == []
    assert differing([_call([(7, 1.0001)])], [_call([(7, 1.0)])]) != []
    # the same answer to other arguments (ids asked in another order) is a difference too
    assert differing([_call([], args=([1, 2],))], [_call([], args=([2, 1],))]) != []


def test_the_recorder_logs_a_real_stores_calls_and_fixes_its_data_state(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "index.sqlite")
    try:
        recorder = Recorder(store)
        assert recorder.collection_id("nope") is None
        assert recorder.data_state() == 0
        recorder.derived = {"kept": 1}  # attributes land on the store
        assert store.derived == {"kept": 1}
        assert [c[0] for c in recorder.calls] == ["collection_id"]
        assert recorder.seconds["collection_id"] > 0
    finally:
        store.close()
