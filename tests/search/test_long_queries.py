"""Long queries over a big index (issue 15): a bug report's terms and names must not make search
read or score the whole index."""

from collections.abc import Collection
from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.search import lexical
from qmd_daemon.search.lexical import LOOSE_POSTINGS, selective_terms
from qmd_daemon.search.pipeline import MAX_NAME_DEFINITIONS, SearchOptions, _symbol_candidates, run_search
from qmd_daemon.search.query import parse_query
from qmd_daemon.search.scoring import ScoringWeights
from qmd_daemon.store.fts5_query import match_expression
from qmd_daemon.store.index_store import IndexStore
from qmd_daemon.store.lexical_query import LexicalQuery
from tests.conftest import indexed

COMMON = ("apple banana cherry delta echo foxtrot golf hotel india juliet kilo lima mike november "
          "oscar papa quebec romeo sierra tango").split()


class RecordingStore(IndexStore):
    """The real store over the same file, keeping the MATCH expressions FTS5 was given: which
    terms reach FTS5 is what costs, and the ranked hits alone do not show it."""

    def __init__(self, path: Path):
        super().__init__(path)
        self.matches: list[str] = []

    def fts_search(self, query: LexicalQuery, collection_ids: list[int], limit: int,
                   weights: tuple[float, float, float],
                   file_ids: Collection[int] | None = None) -> list[tuple[int, float]]:
        self.matches.append(match_expression(query))
        return super().fts_search(query, collection_ids, limit, weights, file_ids)


def test_selective_terms_keep_the_rarest_held_terms_within_the_postings_budget() -> None:
    frequencies = {"Rare": 5, "more": 8_000, "mid": 9_000, "other": 20_000, "absent": 0}
    kept = selective_terms(list(frequencies), frequencies, total=1_000_000)
    assert kept == ["Rare", "more", "mid"], "`other` would pass the budget: the cost is bounded"
    assert sum(frequencies[t] for t in kept) <= LOOSE_POSTINGS
    shares = {"Rare": 5, "frequent": 35_000}
    assert selective_terms(["frequent", "Rare"], shares, total=100_000) == ["Rare"], "in 35% of chunks"
    assert selective_terms(["x", "y"], {"x": 60_000, "y": 50_000}, total=100_000) == ["y"], \
        "the rarest term stays when every one is common"
    fits = {"a": 9_000, "b": 9_500}
    assert selective_terms(["a", "b"], fits, total=10_000) == ["a", "b"], "within the budget all are kept"


def test_the_any_term_pass_ors_only_the_rarest_terms_the_index_holds(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The budget scaled down to this 9-chunk index (30,000 postings needs an index of thousands).
    monkeypatch.setattr(lexical, "LOOSE_POSTINGS", 10)
    files = {f"common_{i}.py": f"# {' '.join(COMMON)}\nX_{i} = {i}\n" for i in range(8)}
    files["rare.py"] = "def frobnicate():\n    # apple banana\n    return 1\n"
    name = indexed(engine, tmp_path / "p", files)
    parsed = parse_query(" ".join([*COMMON, "frobnicate", "zzqxnothere"]))
    store = RecordingStore(engine.settings.index_path)
    try:
        hits = lexical.lexical_search(store, parsed, engine.collection_ids([name]))
        top = store.chunks_by_ids([hits[0].chunk_id])[hits[0].chunk_id]
    finally:
        store.close()
    assert len(store.matches) == 1, "a term no chunk holds: the all-terms pass is not run"
    ored = store.matches[0]
    assert '"frobnicate"' in ored and "zzqxnothere" not in ored
    assert ored == '"frobnicate"', "past the budget, the common words are left out"
    assert top.path == "rare.py"


def test_a_name_many_chunks_define_adds_no_candidates_to_a_question(engine: Engine, tmp_path: Path) -> None:
    files = {f"m{i}.py": f"def read_block(self):\n    return {i}\n" for i in range(MAX_NAME_DEFINITIONS + 1)}
    files["widget.py"] = "def frobnicate_widget():\n    return 0\n"
    name = indexed(engine, tmp_path / "p", files)
    ids = engine.collection_ids([name])
    question: dict = {}
    asked = parse_query("why does read_block fail in frobnicate_widget")
    _symbol_candidates(engine.store, asked, ids, question)
    assert sorted({c.chunk.path for c in question.values()}) == ["widget.py"]
    asked_by_name: dict = {}
    _symbol_candidates(engine.store, parse_query("read_block"), ids, asked_by_name)
    assert len(asked_by_name) == MAX_NAME_DEFINITIONS + 1, "a bare name still finds every definition"


class DefinitionsRecordingStore(IndexStore):
    """The real store, keeping the names whose definitions were read whole."""

    def __init__(self, path: Path):
        super().__init__(path)
        self.read: list[str] = []

    def chunks_defining(self, names: list[str], collection_ids: list[int]) -> list[tuple[int, str, str]]:
        self.read += names
        return super().chunks_defining(names, collection_ids)


def test_a_common_names_definitions_are_not_read_but_candidates_defining_it_keep_their_boost(
    engine: Engine, tmp_path: Path
) -> None:
    """A report naming `__init__` read its 14k definitions at 503k chunks to boost the few among
    its candidates: only the count and the candidates' definitions are read now."""
    files = {f"m{i}.py": f"def read_block(self):\n    return {i}\n" for i in range(MAX_NAME_DEFINITIONS + 4)}
    files["widget.py"] = "def frobnicate_widget():\n    return 0\n"
    name = indexed(engine, tmp_path / "p", files)
    store = DefinitionsRecordingStore(engine.settings.index_path)
    try:
        question = "why does read_block fail in frobnicate_widget m3"
        options = SearchOptions(vectors=False, explain=True, limit=50, per_file=1)
        hits = run_search(store, question, engine.collection_ids([name]), options)
    finally:
        store.close()
    assert "read_block" not in store.read and "frobnicate_widget" in store.read
    boosted = {h.path: h.explain["boosts"].get("definition") for h in hits if h.explain}
    spread = (MAX_NAME_DEFINITIONS + 4) ** -ScoringWeights().definition_spread
    assert boosted["m3.py"] == pytest.approx(ScoringWeights().definition * 0.5 * spread, abs=1e-4)


def test_searching_every_collection_returns_only_what_the_index_still_holds(
    engine: Engine, tmp_path: Path
) -> None:
    """All collections are searched without the collection filter: a removed collection's chunks
    must be gone from FTS5 too."""
    kept = indexed(engine, tmp_path / "a", {"kept.py": "def gizmo_kept():\n    return 'gizmo'\n"})
    gone = indexed(engine, tmp_path / "b", {"gone.py": "def gizmo_gone():\n    return 'gizmo'\n"})
    assert {h.path for h in engine.search("gizmo", [kept])} == {"kept.py"}
    assert {h.path for h in engine.search("gizmo")} == {"kept.py", "gone.py"}
    engine.remove_collection(gone)
    assert {h.path for h in engine.search("gizmo")} == {"kept.py"}


def test_a_compound_the_index_spells_is_ored_and_counted_as_its_token_alone(
    engine: Engine, tmp_path: Path
) -> None:
    """`set_output` ORed as `"set_output" OR ("set" AND "output")` reads the postings of `set` and
    `output` (100k chunks each at 476k); the parts are only the fallback for a spelling no chunk
    has."""
    files = {"out.py": "def set_output(frame):\n    return frame\n",
             "words.py": "# set the output of the frame\n"}
    name = indexed(engine, tmp_path / "p", files)
    ids = engine.collection_ids([name])
    store = RecordingStore(engine.settings.index_path)
    try:
        held = lexical.lexical_search(store, parse_query("set_output zzqxnothere"), ids)
        spelled_otherwise = lexical.lexical_search(store, parse_query("setOutput zzqxnothere"), ids)
        paths = {cid: row.path for cid, row in store.chunks_by_ids([h.chunk_id for h in held]).items()}
    finally:
        store.close()
    assert store.matches[0] == '"set_output"', "held as one token: its parts are not read"
    assert [paths[h.chunk_id] for h in held] == ["out.py"]
    assert store.matches[1] == '("setoutput" OR ("set" AND "output"))', "no chunk spells it so"
    assert len(spelled_otherwise) == 2, "the parts still find both chunks"
    frequencies = lexical.document_frequencies(engine.store, ["set_output", "setOutput"], ids)
    assert frequencies == {"set_output": 1, "setOutput": 2}


def test_past_the_budget_a_compound_spelled_by_no_chunk_costs_its_parts_postings(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`py37_0` matches 655 chunks through `py`, `37` and `0`, whose 520k postings FTS5 reads to
    find them: the budget weighs that, not the 655."""
    monkeypatch.setattr(lexical, "LOOSE_POSTINGS", 10)  # scaled down to this 18-chunk index
    files = {f"a{i}.py": f"# alpha {i}\n" for i in range(8)} | {f"b{i}.py": f"# beta {i}\n" for i in range(8)}
    files |= {"both.py": "# alpha beta\n", "rare.py": "def frobnicate():\n    return 1\n"}
    name = indexed(engine, tmp_path / "p", files)
    ids = engine.collection_ids([name])
    store = RecordingStore(engine.settings.index_path)
    try:
        lexical.lexical_search(store, parse_query("alphaBeta frobnicate zzqxnothere"), ids)
        counts = lexical.term_counts(store, ["alphaBeta", "frobnicate"], ids)
    finally:
        store.close()
    assert store.matches == ['"frobnicate"'], "the parts' 18 postings pass the budget of 10"
    assert (counts["alphaBeta"].chunks, counts["alphaBeta"].postings) == (1, 18)


def test_definitions_over_every_collection_are_only_those_the_index_still_holds(
    engine: Engine, tmp_path: Path
) -> None:
    """chunks_defining reads every collection's definitions without the collection joins: one
    collection asked alone, all of them, and all of them after one is removed."""
    kept = indexed(engine, tmp_path / "a", {"kept.py": "def gizmo():\n    return 'kept'\n"})
    gone = indexed(engine, tmp_path / "b", {"gone.py": "def Gizmo():\n    return 'gone'\n"})
    store = engine.store

    def defining(names: list[str]) -> list[str]:
        rows = store.chunks_defining(["GIZMO"], engine.collection_ids(names))
        return sorted(store.chunks_by_ids([c for c, _n, _k in rows])[c].path for c, _n, _k in rows)

    assert defining([kept]) == ["kept.py"]
    assert defining([kept, gone]) == ["gone.py", "kept.py"]
    engine.remove_collection(gone)
    assert defining([kept]) == ["kept.py"]


def test_a_names_definitions_are_counted_on_the_index_alone(engine: Engine, tmp_path: Path) -> None:
    """definition_counts counts distinct chunks per spelling from the name index without reading
    a definitions row (`__init__`: 9,363 chunks at 503k, 15 ms through the rows)."""
    body = "    def Read(self):\n        return 1\n    def read(self):\n        pass\n"
    files = {f"m{i}.py": f"class M{i}:\n{body}" for i in range(5)}
    name = indexed(engine, tmp_path / "p", files)
    ids = engine.collection_ids([name])
    store = engine.store
    assert store.definition_counts(["READ", "m0"], ids) == {"Read": 5, "read": 5, "M0": 1}
    marks = ",".join("?" * 2)
    plan = store.conn.execute(
        f"""EXPLAIN QUERY PLAN SELECT name, count(DISTINCT chunk_id) FROM definitions
            WHERE name COLLATE NOCASE IN ({marks}) GROUP BY name""", ["READ", "m0"]).fetchall()
    assert "COVERING INDEX definitions_by_name_chunk" in " ".join(str(row[-1]) for row in plan)
