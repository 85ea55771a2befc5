"""Searching a part of a repository (`--path`, `path:`): the patterns narrow retrieval itself, so a
chunk the whole collection ranks far below the candidates still comes back; real SQLite, real
files, the small profile's vectors where vectors are searched."""

from __future__ import annotations

from pathlib import Path

import pytest

from qmd_daemon.engine import Engine
from qmd_daemon.errors import PathPatternError
from qmd_daemon.search import path_filter
from qmd_daemon.search.lexical import lexical_search
from qmd_daemon.search.path_filter import allowed_files, path_spec
from qmd_daemon.search.pipeline import LEXICAL_CANDIDATES, SearchOptions, SearchTrace
from qmd_daemon.search.query import parse_query
from tests.conftest import write_tree

QUESTION = "retry backoff"
SERVER = "packages/server/handler.py"
# The client package says the question's words often, in short chunks; the server's one file says
# them once in a long one, so BM25 ranks every client chunk above it.
CLIENTS = LEXICAL_CANDIDATES + 20
SERVER_TEXT = "def handle(request):\n" + "".join(
    f"    step_{i} = request.field_{i}  # unrelated bookkeeping\n" for i in range(60)
) + "    return retry_later(request)  # retry backoff\n"


def _client(i: int) -> str:
    return f"def retry_backoff_{i}():\n    # retry backoff: retry with backoff\n    return retry({i})\n"


@pytest.fixture
def monorepo(engine: Engine, tmp_path: Path) -> str:
    files = {f"packages/client/retry_{i}.py": _client(i) for i in range(CLIENTS)}
    files[SERVER] = SERVER_TEXT
    files["packages/server/README.md"] = "# Server\n\nServes requests.\n"
    name = engine.add_collection(write_tree(tmp_path / "mono", files)).name
    engine.update([name])
    return name


def _paths(engine: Engine, name: str, query: str, *patterns: str, limit: int = 10) -> list[str]:
    options = SearchOptions(paths=patterns)
    return [hit.path for hit in engine.search(query, [name], limit=limit, options=options)]


def test_a_folder_filter_finds_a_chunk_the_whole_collection_ranks_below_the_candidates(
    engine: Engine, monorepo: str
) -> None:
    ids = engine.collection_ids([monorepo])
    unfiltered = lexical_search(engine.store, parse_query(QUESTION), ids, LEXICAL_CANDIDATES)
    rows = engine.store.chunks_by_ids([h.chunk_id for h in unfiltered])
    assert len(unfiltered) == LEXICAL_CANDIDATES and all(r.path != SERVER for r in rows.values())
    assert SERVER not in _paths(engine, monorepo, QUESTION, limit=50)
    assert _paths(engine, monorepo, QUESTION, "packages/server/") == [SERVER]


def test_exclusions_alone_keep_everything_else_and_inline_patterns_filter_the_same(
    engine: Engine, monorepo: str
) -> None:
    assert _paths(engine, monorepo, QUESTION, "!packages/client/") == [SERVER]
    assert _paths(engine, monorepo, f"-path:packages/client/ {QUESTION}") == [SERVER]
    assert _paths(engine, monorepo, f"path:packages/server/ {QUESTION}") == [SERVER]
    # an exclusion inside a folder kept; a pattern by name, at any depth
    kept = _paths(engine, monorepo, QUESTION, "packages/", "!**/client/retry_1*.py", limit=200)
    assert kept and all(not p.startswith("packages/client/retry_1") for p in kept)
    assert {p.rsplit("/", 1)[0] for p in kept} == {"packages/client", "packages/server"}
    assert _paths(engine, monorepo, "server requests", "*.md") == ["packages/server/README.md"]
    assert _paths(engine, monorepo, QUESTION, "no/such/folder/") == []
    # the chunks defining a queried name join the candidates whatever retrieval found: not outside
    assert _paths(engine, monorepo, "retry_backoff_3")[0] == "packages/client/retry_3.py"
    assert _paths(engine, monorepo, "retry_backoff_3", "packages/server/") == []


def test_the_inline_syntax_is_taken_out_of_the_question() -> None:
    parsed = parse_query("path:src/ -path:src/vendor/ how are flags parsed")
    assert parsed.paths == ["src/", "!src/vendor/"]
    assert parsed.text == "how are flags parsed" and "path" not in parsed.terms
    assert parsed.excludes == []  # `-path:` is no excluded word
    assert parse_query("sys.path: is read at start").paths == []  # only a word that starts with it
    report = "Traceback (most recent call last):\n" + "  File \"app/main.py\", line 3\n" * 40
    assert parse_query(f"{report}path:/usr/lib/python3 not found").paths == []  # a log, not a filter


@pytest.mark.parametrize("bad", ["!", "", "   ", "./", ".\\", "[", "#comment", "!/"])
def test_a_bad_pattern_is_a_usage_error_naming_it(bad: str) -> None:
    with pytest.raises(PathPatternError, match="bad path pattern") as raised:
        path_spec(["src/", bad])
    assert raised.value.exit_code == 2 and raised.value.http_status == 400


@pytest.mark.parametrize(
    "typed",
    ["packages\\server\\", ".\\packages\\server\\handler.py", "./packages/server/", "path:packages\\server"],
)
def test_windows_separators_and_a_leading_dot_slash_filter_as_the_posix_pattern(
    engine: Engine, monorepo: str, typed: str
) -> None:
    """`packages\\server\\` (pasted from a Windows path) was refused, `.\\packages\\server\\handler.py`
    and `./packages/server/` matched no file (gitignore reads `\\` as an escape, `./` as a name)."""
    if typed.startswith("path:"):
        assert _paths(engine, monorepo, f"{typed} {QUESTION}") == [SERVER]
    else:
        assert _paths(engine, monorepo, QUESTION, typed) == [SERVER]
    keep, _ = path_spec(["\\*.py"])  # a backslash before a special character is still an escape
    assert keep is not None and keep.match_file("*.py") and not keep.match_file("a.py")


def test_the_allowed_files_are_matched_once_per_data_state(
    engine: Engine, monorepo: str, tmp_path: Path
) -> None:
    ids = engine.collection_ids([monorepo])
    first = allowed_files(engine.store, ids, ["packages/server/"])
    assert allowed_files(engine.store, ids, ["packages/server/"]) is first  # kept: no paths matched again
    assert len(first.file_ids) == 2 and first.chunk_ids is not None and first.share == 2 / (CLIENTS + 2)
    (tmp_path / "mono" / "packages" / "server" / "new.py").write_text("def added():\n    return 1\n")
    engine.update([monorepo])
    after = allowed_files(engine.store, ids, ["packages/server/"])
    assert len(after.file_ids) == 3  # the data changed: matched anew


FILES = {
    "net/retry.py": 'def backoff_delays(attempts):\n    """Wait longer after every failed attempt."""\n'
    "    return [2 ** n for n in range(attempts)]\n",
    "net/timeouts.py": "def deadline(seconds):\n    return time.monotonic() + seconds\n",
    "text/slug.py": "def slugify(title):\n    return '-'.join(title.lower().split())\n",
    "db/pool.py": "class ConnectionPool:\n    def acquire(self):\n        return self._idle.pop()\n",
}


@pytest.mark.parametrize("exact_among", [path_filter.EXACT_AMONG, 1])
def test_vectors_search_among_the_allowed_files_and_allowing_all_ranks_as_unfiltered(
    small_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exact_among: int
) -> None:
    # 1: more allowed chunks than compared one by one, so the KNN is asked for more and filtered
    monkeypatch.setattr(path_filter, "EXACT_AMONG", exact_among)
    name = small_engine.add_collection(write_tree(tmp_path / "p", FILES)).name
    small_engine.update([name])
    small_engine.embed([name])
    question = "make a url friendly version of a headline"
    vector_only = SearchOptions(lexical=False, boosts=False)
    assert small_engine.search(question, [name], options=vector_only)[0].path == "text/slug.py"
    trace = SearchTrace()
    only_net = SearchOptions(lexical=False, boosts=False, paths=("net/",))
    hits = small_engine.search(question, [name], options=only_net, trace=trace)
    assert trace.lists["vec"] == 2 and {h.path for h in hits} == {"net/retry.py", "net/timeouts.py"}
    for options in (SearchOptions(), vector_only):
        unfiltered = small_engine.search(question, [name], options=options)
        allowing_all = SearchOptions(**{**vars(options), "paths": ("*",)})
        everything = small_engine.search(question, [name], options=allowing_all)
        assert [(h.path, h.line) for h in everything] == [(h.path, h.line) for h in unfiltered]
        assert [h.score for h in everything] == pytest.approx([h.score for h in unfiltered], abs=1e-6)
