"""The rule both backends' write_file follows (store/chunk_plan.py): the contract suite checks the
backends agree; this checks what the rule itself decides."""

from qmd_daemon.store.chunk_plan import StoredChunks, plan_chunks
from qmd_daemon.text.chunk_model import Chunk, Definition


def _stored(*rows: tuple[int, Chunk]) -> StoredChunks:
    out: StoredChunks = {}
    for chunk_id, chunk in rows:
        context = (" ".join(chunk.symbols), chunk.signature, chunk.heading)
        out.setdefault(chunk.content_hash, []).append((chunk_id, context))
    return out


def test_kept_text_keeps_its_id_new_text_is_added_and_the_rest_dropped() -> None:
    a = Chunk(1, 2, "def a():\n    return 1\n", [Definition("a", "function", 1)], "def a():")
    b = Chunk(3, 4, "def b():\n    return 2\n", [Definition("b", "function", 3)], "def b():")
    gone = Chunk(5, 6, "x = 1\n")
    new = Chunk(1, 1, "import os\n")
    plan = plan_chunks(_stored((10, a), (11, b), (12, gone)), [new, a, b], rederive=False)
    assert [(seq, chunk_id) for seq, chunk_id, _ in plan.moved] == [(1, 10), (2, 11)]
    assert plan.fresh == [(0, new)]
    assert plan.stale == [12]
    assert plan.rederived == []


def test_same_lines_in_a_renamed_function_are_rederived_and_rederive_reaches_every_kept_chunk() -> None:
    body = "    total += step\n    return total\n"
    before = Chunk(3, 4, body, heading="def accumulate(step):")
    after = Chunk(3, 4, body, heading="def add_up(step):")
    plan = plan_chunks(_stored((7, before)), [after], rederive=False)
    assert plan.rederived == [(7, after)] and plan.fresh == [] and plan.stale == []
    same = Chunk(3, 4, body, heading="def add_up(step):")
    assert plan_chunks(_stored((7, after)), [same], rederive=False).rederived == []
    assert plan_chunks(_stored((7, after)), [same], rederive=True).rederived == [(7, same)]


def test_two_copies_of_one_text_take_one_stored_id_each() -> None:
    twin = Chunk(1, 1, "pass\n")
    plan = plan_chunks(_stored((1, twin)), [twin, Chunk(2, 2, "pass\n")], rederive=False)
    assert [chunk_id for _, chunk_id, _ in plan.moved] == [1]
    assert [seq for seq, _ in plan.fresh] == [1]
