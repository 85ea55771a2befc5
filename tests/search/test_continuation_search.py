"""The middle of a long function is found by the function's name and a word only it holds: the
heading a continuation window carries is in its FTS row (issue 13: "cookies redirects" did not
reach the cookie lines of requests' `resolve_redirects`)."""

from pathlib import Path

from qmd_daemon.engine import Engine
from qmd_daemon.search.pipeline import SearchOptions
from tests.conftest import indexed
from tests.ingest.test_continuation_heading import CASES

# other modules, so that BM25's idf means something
OTHERS = {
    f"mod{i}.py": f"def helper_{i}(value):\n    '''Redirect value number {i} to the log.'''\n"
    f"    return str(value) + '{i}'\n"
    for i in range(8)
}


def _line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def _covers(hit, line: int) -> bool:
    return hit.line <= line <= hit.end_line


def test_the_cookie_lines_are_found_by_the_function_name(engine: Engine, tmp_path: Path) -> None:
    path, text, _, _ = CASES["python"]
    name = indexed(engine, tmp_path / "p", {path: text, **OTHERS})
    options = SearchOptions(per_file=0, explain=True)
    hits = engine.search("resolve redirects merge_cookies", [name], options=options)
    top = hits[0]
    assert top.path == path and _covers(top, _line_of(text, "merge_cookies")), [
        (h.path, h.line, h.end_line) for h in hits]
    assert not _covers(top, _line_of(text, "def resolve_redirects"))
    assert "definition" not in top.explain["boosts"]  # it does not define resolve_redirects


def test_renaming_the_function_renames_its_continuations(engine: Engine, tmp_path: Path) -> None:
    """Only the first window's lines change; the kept windows get the new name in their FTS row."""
    path, text, _, _ = CASES["python"]
    root = tmp_path / "p"
    name = indexed(engine, root, {path: text, **OTHERS})
    renamed = text.replace("def resolve_redirects", "def follow_hops")
    (root / path).write_text(renamed)
    engine.update([name])
    ids = engine.collection_ids([name])
    line = _line_of(renamed, "merge_cookies")
    queries = (("follow_hops AND merge_cookies", True), ("resolve_redirects AND merge_cookies", False))
    for query, found in queries:
        rows = engine.store.chunks_by_ids([i for i, _ in engine.store.fts_search(query, ids, 10, (1, 1, 1))])
        assert any(r.start_line <= line <= r.end_line for r in rows.values()) == found, query
