"""`qmd-daemon mcp`: the official MCP SDK's own client talks to a real `qmd-daemon mcp` subprocess
over stdio, against a real index in a temporary QMD_DAEMON_HOME; its `search` goes through a real
daemon, which the server starts as ai-search does (stopped after each test)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.mcp_session import rss_mib, server_pid
from tests.conftest import MODELS_DIR, SAMPLE_GO, SAMPLE_MD, SAMPLE_PY, write_tree
from tests.daemon.support import pid_running, state_of, stop_daemon, wait_for

CLI = Path(sys.executable).parent / "qmd-daemon"  # the console script a user (or an MCP client) runs


def _command(*args: str) -> tuple[str, list[str]]:
    if CLI.exists():
        return str(CLI), list(args)
    return sys.executable, ["-c", "from qmd_daemon.cli import main; main()", *args]


@pytest.fixture(autouse=True)
def _stop_daemon(home: Path) -> Iterator[None]:
    """The daemon a server started (detached, as ai-search starts it) is stopped with the test."""
    yield
    stop_daemon(home)


def _env(home: Path, **extra: str) -> dict[str, str]:
    """The server's environment, its daemon's too: this home, no model preloaded at start."""
    return {"QMD_DAEMON_HOME": str(home), "QMD_PRELOAD": "0", "HF_HUB_OFFLINE": "1", **extra}


@pytest.fixture
def indexed(home: Path, tmp_path: Path) -> dict[str, Any]:
    """Two collections: `proj` (a git repository) and `docs`; plus files that are not indexed."""
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings

    proj = write_tree(
        tmp_path / "proj",
        {
            "client.py": SAMPLE_PY,
            "pool/conn.go": SAMPLE_GO,
            "README.md": SAMPLE_MD,
            ".gitignore": "secret.env\n",
            "secret.env": "TOKEN=hunter2\n",
        },
    )
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    docs = write_tree(tmp_path / "docs", {"README.md": "# Docs\n\nSee ClientSession.\n"})
    (tmp_path / "outside.py").write_text("SECRET = 1\n", encoding="utf-8")
    engine = Engine(Settings.from_env())
    try:
        engine.add_collection(proj, "proj", include_by_default=True)
        engine.add_collection(docs, "docs")
        engine.update()
    finally:
        engine.close()
    return {"home": home, "proj": proj, "docs": docs, "outside": tmp_path / "outside.py"}


async def _session_calls(
    home: Path, calls: list[tuple[str, dict[str, Any]]], cwd: Path | None = None, **env: str
) -> tuple[list[str], list[Any]]:
    command, args = _command("mcp")
    # by default from a folder outside every git repository (the home): the checkout the tests run
    # in is one, and a search from an unregistered repository registers and indexes it
    params = StdioServerParameters(
        command=command, args=[*args], env=_env(home, **env), cwd=cwd or home
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "qmd-daemon"
        tools = [t.name for t in (await session.list_tools()).tools]
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def _text(result: Any) -> str:
    return "".join(c.text for c in result.content if c.type == "text")


def _hits(result: Any) -> Any:
    """The search tool's first text block: the hits (a second one, when present, holds notes)."""
    return json.loads(result.content[0].text)


def _notes(result: Any) -> list[str]:
    return [c.text for c in result.content[1:] if c.type == "text"]


async def test_search_and_get_over_stdio(indexed: dict[str, Any]) -> None:
    proj: Path = indexed["proj"]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "TCPConnector"}),  # 0
        ("search", {"query": "ClientSession", "collections": ["docs"], "limit": 1}),  # 1
        ("search", {"query": "ClientSession", "min_score": 1.0}),  # 2: nothing scores above 1
        ("search", {"query": "ClientSession", "max_tokens": 0, "limit": 50}),  # 3: no token budget
        ("get", {"collection": "proj", "path": "client.py", "start_line": 3, "end_line": 4}),  # 4
        ("get", {"path": "pool/conn.go"}),  # 5: unique across collections, no collection needed
        ("get", {"path": str(proj / "client.py"), "start_line": 17}),  # 6: absolute path inside a root
        ("get", {"path": "README.md", "collection": "docs"}),  # 7: README.md is in both
        ("search", {"query": "ClientSession", "paths": ["*.md", "!pool/"]}),  # 8: only the README
    ]
    tools, r = await _session_calls(indexed["home"], calls)
    assert sorted(tools) == ["get", "search"]
    assert not any(x.is_error for x in r), [_text(x) for x in r if x.is_error]

    hits = _hits(r[0])
    assert hits[0]["path"] == "pool/conn.go" and hits[0]["collection"] == "proj"
    assert {"path", "line", "end_line", "score", "snippet", "collection"} <= set(hits[0])
    only_docs = _hits(r[1])
    assert len(only_docs) == 1 and only_docs[0]["collection"] == "docs"
    assert _hits(r[2]) == []
    assert _hits(r[3])

    source = (proj / "client.py").read_text(encoding="utf-8").split("\n")
    assert _text(r[4]) == "\n".join(source[2:4]) + "\n"
    assert _text(r[5]) == SAMPLE_GO
    assert _text(r[6]) == "\n".join(source[16:]).rstrip("\n") + "\n"
    assert _text(r[7]) == "# Docs\n\nSee ClientSession.\n"
    assert {h["path"] for h in _hits(r[8])} == {"README.md"}
    assert {h["path"] for h in _hits(r[3])} > {"README.md"}  # unfiltered: client.py too


async def test_search_covers_the_project_the_server_runs_in_and_the_default_collections(
    indexed: dict[str, Any], tmp_path: Path
) -> None:
    def collections(result: Any) -> set[str]:
        return {hit["collection"] for hit in _hits(result)}

    call = [("search", {"query": "ClientSession", "limit": 50})]
    _, in_docs = await _session_calls(indexed["home"], call, cwd=indexed["docs"])
    assert collections(in_docs[0]) == {"docs", "proj"}  # proj is included by default
    _, outside = await _session_calls(indexed["home"], call, cwd=tmp_path)
    assert collections(outside[0]) == {"proj"}  # outside every collection: the default one


async def test_a_search_from_a_git_repository_nobody_registered_indexes_it_first(
    indexed: dict[str, Any], tmp_path: Path
) -> None:
    """As ai-search does: before, the search answered from the other collections alone (`proj`'s
    TCPConnector for a question about this repository's code, a path that is not in it)."""
    ring = "package ring\n\n// RingBuffer keeps the last N events.\ntype RingBuffer struct{ n int }\n"
    fresh = write_tree(tmp_path / "fresh", {"ring.go": ring})
    subprocess.run(["git", "init", "-q", str(fresh)], check=True)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "RingBuffer keeps the last events"}),
        ("get", {"path": "ring.go", "start_line": 3, "end_line": 3}),
    ]
    _, results = await _session_calls(indexed["home"], calls, cwd=fresh)
    assert not any(r.is_error for r in results), [_text(r) for r in results]
    hits = _hits(results[0])
    assert (hits[0]["collection"], hits[0]["path"]) == ("repo-fresh", "ring.go"), hits
    assert _text(results[1]) == "// RingBuffer keeps the last N events.\n"
    _, again = await _session_calls(indexed["home"], [("search", {"query": "RingBuffer"})], cwd=fresh)
    assert _hits(again[0])[0]["collection"] == "repo-fresh"  # registered once, kept


async def test_the_search_tool_names_every_key_of_a_hit_and_what_a_low_score_means(
    indexed: dict[str, Any],
) -> None:
    """What a model reads to use the tool: `related` came back unexplained, and nothing said that
    a best score under 0.25 means "most likely no answer here" (the skill says so, MCP did not)."""
    from qmd_daemon.search.calibration import ANSWER_THRESHOLD

    command, args = _command("mcp")
    params = StdioServerParameters(command=command, args=args, env=_env(indexed["home"]),
                                   cwd=indexed["proj"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tool = next(t for t in (await session.list_tools()).tools if t.name == "search")
        result = await session.call_tool("search", {"query": "ClientSession", "limit": 50})
    keys = set().union(*(hit.keys() for hit in _hits(result)))
    assert "related" in keys  # README.md cites client.py
    description = tool.description or ""
    assert all(f"{key}," in description or f"{key}}}" in description for key in keys), (keys, description)
    assert f"under {ANSWER_THRESHOLD}" in description


async def test_what_ai_search_says_on_stderr_comes_back_as_notes_beside_the_hits(
    indexed: dict[str, Any],
) -> None:
    """An MCP client's model never sees the server's stderr: `paths` that match no file gave a
    bare `[]`, as if the question had no answer, where ai-search says why on stderr."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search", {"query": "ClientSession", "paths": ["no_such_folder/"]}),
        ("search", {"query": "ClientSession", "paths": ["*.md"]}),
    ]
    _, (nothing, some) = await _session_calls(indexed["home"], calls, cwd=indexed["proj"])
    assert _hits(nothing) == []
    notes = _notes(nothing)
    assert len(notes) == 1 and "note: no indexed file matches the `paths` patterns" in notes[0], notes
    assert _hits(some) and not any("patterns" in note for note in _notes(some))


async def test_get_reads_a_path_in_several_collections_from_the_servers_project(
    indexed: dict[str, Any],
) -> None:
    """README.md is in `proj` and `docs`: a hit's path, read from the project the search came from
    (it was refused as ambiguous though the search had put that project first)."""
    call = [("get", {"path": "README.md"})]
    _, in_proj = await _session_calls(indexed["home"], call, cwd=indexed["proj"])
    assert not in_proj[0].is_error and _text(in_proj[0]) == SAMPLE_MD
    _, in_docs = await _session_calls(indexed["home"], call, cwd=indexed["docs"])
    assert _text(in_docs[0]) == "# Docs\n\nSee ClientSession.\n"


async def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(indexed: dict[str, Any]) -> None:
    proj: Path = indexed["proj"]
    bad: list[tuple[str, dict[str, Any], str]] = [
        ("search", {"query": "x", "limit": 0}, "limit"),
        ("search", {"query": "x", "limit": 500}, "limit"),
        ("search", {"query": "x", "limit": "ten"}, "limit"),
        ("search", {"query": "x", "min_score": 2}, "min_score"),
        ("search", {"query": "x", "max_tokens": -1}, "max_tokens"),
        ("search", {"query": "   "}, "empty"),
        # ai-search's bound (a query past the daemon's request cap was "Request Entity Too Large")
        ("search", {"query": "x " * 500_001}, "at most 1000000 characters"),
        ("search", {}, "query"),
        ("search", {"query": "x", "collections": ["nope"]}, "no collection named 'nope'"),
        ("search", {"query": "x", "paths": ["src/["]}, "bad path pattern"),
        ("get", {"path": "README.md"}, "several collections"),
        ("get", {"path": "client.py", "collection": "nope"}, "no collection named 'nope'"),
        ("get", {"path": "secret.env", "collection": "proj"}, "not a file indexed"),  # ignored by git
        ("get", {"path": "../outside.py", "collection": "proj"}, "not a file indexed"),
        ("get", {"path": str(indexed["outside"])}, "not a file indexed"),  # absolute, outside every root
        ("get", {"path": "/etc/passwd"}, "not a file indexed"),
        ("get", {"path": "client.py", "start_line": 0}, "start_line"),
        ("get", {"path": "client.py", "start_line": 5, "end_line": 2}, "before start_line"),
        ("get", {"path": "client.py", "start_line": 999}, "past the end"),
        ("nope", {}, "nope"),
    ]
    calls = [(name, args) for name, args, _ in bad] + [("get", {"path": "client.py", "start_line": 1})]
    (proj / "pool" / "conn.go").unlink()  # indexed, then gone from disk
    calls.append(("get", {"path": "pool/conn.go"}))
    _, results = await _session_calls(indexed["home"], calls)
    for (name, args, expected), result in zip(bad, results, strict=False):
        assert result.is_error, (name, args, _text(result))
        assert expected in _text(result), (name, args, _text(result))
    assert not results[len(bad)].is_error and _text(results[len(bad)]) == SAMPLE_PY  # still serving
    assert results[-1].is_error and "qmd-daemon update" in _text(results[-1])


async def test_get_in_a_collection_whose_folder_is_gone_names_the_remove(indexed: dict[str, Any]) -> None:
    # it said "... cannot be read now (No such file or directory); run `qmd-daemon update`", and
    # update leaves a collection whose folder is gone as it was
    docs: Path = indexed["docs"]
    docs.rename(docs.with_name("docs-moved"))
    call = ("get", {"path": "README.md", "collection": "docs"})
    _, (result,) = await _session_calls(indexed["home"], [call])
    assert result.is_error and _text(result).endswith(
        f"'README.md' is indexed, but the folder of collection docs ({docs.resolve()}) is gone (moved or "
        "deleted?): `qmd-daemon collection remove docs` forgets it"
    )


# Put first on sys.meta_path, this finder answers for `mcp` and its submodules the way Python's
# own path finder answers for a package no installed distribution provides.
HIDE_SDK = """
import sys
class NoMcp:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "mcp" or name.startswith("mcp."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoMcp)
from qmd_daemon.cli import main
main()
"""


def test_without_the_sdk_one_line_error_and_non_zero_exit(home: Path) -> None:
    """The mcp extra not installed. Not a fake: the real CLI entry point runs unchanged in a real
    subprocess (nothing of qmd-daemon is patched); only the import system is told that no `mcp`
    package exists, so `import mcp...` fails with the very ModuleNotFoundError (name 'mcp') that
    an environment without the extra raises. A second virtual environment without the extra would
    test the same thing at the cost of installing every other dependency again."""
    proc = subprocess.run(
        [sys.executable, "-c", HIDE_SDK, "mcp"],
        capture_output=True,
        text=True,
        env=dict(os.environ, QMD_DAEMON_HOME=str(home)),
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode != 0
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0] == (
        "qmd-daemon: error: `qmd-daemon mcp` needs the optional MCP SDK (mcp>=2), which is not "
        f"installed; install it with: {sys.executable} -m pip install 'qmd-daemon[mcp]'"
    )
    assert not home.exists()  # it stopped before touching the index


async def test_get_refuses_a_folder_swapped_for_a_link_out_of_the_root(
    indexed: dict[str, Any], tmp_path: Path
) -> None:
    # issue 12 item 3: the file is read from where it really is, checked on the opened file
    proj: Path = indexed["proj"]
    elsewhere = write_tree(tmp_path / "elsewhere", {"conn.go": "package secret // TOKEN=hunter2\n"})
    shutil.rmtree(proj / "pool")
    os.symlink(elsewhere, proj / "pool")  # pool/conn.go is indexed; pool/ now leads out
    _, results = await _session_calls(indexed["home"], [("get", {"path": "pool/conn.go"})])
    assert results[0].is_error and "leads outside" in _text(results[0])
    assert "hunter2" not in _text(results[0])


async def test_get_refuses_a_file_grown_past_the_size_cap_after_indexing(indexed: dict[str, Any]) -> None:
    # review item B: `get` read whole whatever the file had become, however big
    from qmd_daemon.settings import DEFAULT_MAX_FILE_BYTES

    (indexed["proj"] / "pool" / "conn.go").write_bytes(b"// GROWN\n" * (DEFAULT_MAX_FILE_BYTES // 9 + 1))
    _, results = await _session_calls(indexed["home"], [("get", {"path": "pool/conn.go"})])
    assert results[0].is_error and "over the index's size cap" in _text(results[0])
    assert "GROWN" not in _text(results[0])


async def test_a_notebook_over_other_files_size_cap_is_searched_and_read(indexed: dict[str, Any]) -> None:
    # a notebook's plots make most of its bytes: its cap is 8x (file_types.byte_cap), for `get` too
    from qmd_daemon.engine import Engine
    from qmd_daemon.settings import Settings
    from tests.ingest.test_notebook import TRAINING, file_line

    (indexed["proj"] / "train.ipynb").write_text(TRAINING, encoding="utf-8")
    engine = Engine(Settings.from_env())
    try:
        engine.update(["proj"])
    finally:
        engine.close()
    line = file_line(TRAINING, "def fit_churn_classifier")
    _, results = await _session_calls(indexed["home"], [
        ("search", {"query": "fit_churn_classifier", "collections": ["proj"]}),
        ("get", {"path": "train.ipynb", "start_line": line, "end_line": line}),
    ])
    assert not any(r.is_error for r in results), [_text(r) for r in results]
    hit = _hits(results[0])[0]
    assert (hit["path"], hit["line"]) == ("train.ipynb", line)
    assert _text(results[1]) == TRAINING.split("\n")[line - 1] + "\n"  # the file's own line, as JSON


# -- through the daemon ----------------------------------------------------------------------------


def _mapped(pid: int) -> str:
    """The files a process has mapped: a model llama.cpp loaded is an mmapped .gguf, and the
    llama_cpp binding maps its libllama as soon as it is imported."""
    return Path(f"/proc/{pid}/maps").read_text()


async def test_an_edit_between_two_searches_is_found_by_the_second_and_get_reads_it(
    indexed: dict[str, Any],
) -> None:
    """first-hour walk: an MCP-only session never refreshed the index (its own Engine, no watcher,
    no daemon kept alive): a function added between two searches was not found by the second."""
    proj: Path = indexed["proj"]
    command, args = _command("mcp")
    params = StdioServerParameters(command=command, args=args, env=_env(indexed["home"]), cwd=proj)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        before = await session.call_tool("search", {"query": "reticulate_splines_quickly"})
        with (proj / "client.py").open("a", encoding="utf-8") as handle:
            handle.write("\n\ndef reticulate_splines_quickly(spline):\n    return spline * 2\n")
        (proj / "fresh.py").write_text("def frobnicate_the_widget():\n    return 42\n", encoding="utf-8")
        edited = await session.call_tool("search", {"query": "reticulate_splines_quickly"})
        added = await session.call_tool("search", {"query": "frobnicate_the_widget"})
        read_back = await session.call_tool("get", {"path": "fresh.py", "start_line": 1, "end_line": 1})
    assert not any(r.is_error for r in (before, edited, added, read_back))
    assert not any("reticulate_splines_quickly" in h["snippet"] for h in _hits(before))
    hit = _hits(edited)[0]
    assert (hit["collection"], hit["path"]) == ("proj", "client.py") and "reticulate" in hit["snippet"]
    assert _hits(added)[0]["path"] == "fresh.py"
    assert _text(read_back) == "def frobnicate_the_widget():\n"  # the file the daemon indexed just now
    state = state_of(indexed["home"])
    assert state is not None and pid_running(state["pid"])  # the daemon answered, and still runs


async def test_the_server_loads_no_model_while_the_daemon_serves(
    indexed: dict[str, Any], small_models: dict[str, Path]
) -> None:
    """The server's process maps no model file and no llama.cpp library: the daemon's, which the
    same test sees loaded (so the signal can fail), answers. Before, the server loaded its own copy
    of the models (hundreds of MB to GBs) beside the daemon's."""
    home: Path = indexed["home"]
    (home / "config" / "index.yml").write_text(
        (home / "config" / "index.yml").read_text() + "models: {profile: small}\n"
    )
    command, args = _command("mcp")
    env = _env(home, QMD_MODELS_DIR=str(MODELS_DIR), QMD_PRELOAD="1")  # the daemon loads its embedder
    params = StdioServerParameters(command=command, args=args, env=env, cwd=indexed["proj"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("search", {"query": "how does the connector acquire a connection"})
        daemon = state_of(home)
        assert daemon is not None
        wait_for(lambda: ".gguf" in _mapped(daemon["pid"]), timeout=120)  # the daemon's model
        again = await session.call_tool("search", {"query": "TCPConnector"})
        server = server_pid(os.getpid())
        assert server is not None
        maps, rss = _mapped(server), rss_mib(server)
    assert not result.is_error and not again.is_error, _text(result)
    assert _hits(again)[0]["path"] == "pool/conn.go"
    assert ".gguf" not in maps and "libllama" not in maps and "llama_cpp" not in maps
    assert rss < 150, rss  # the interpreter, the SDK and the index's reader: no model


async def test_without_a_daemon_the_server_searches_in_process_and_says_why_once(
    indexed: dict[str, Any], tmp_path: Path
) -> None:
    """The daemon cannot start (its Python exits at once for `serve`): each search still answers
    from a one-off in-process search, ai-search's fallback, and the server's stderr says why once."""
    broken = tmp_path / "broken-python"
    broken.write_text(f'#!/bin/sh\nif [ "$3" = serve ]; then exit 3; fi\nexec {sys.executable} "$@"\n')
    broken.chmod(0o755)
    command, args = _command("mcp")
    env = _env(indexed["home"], QMD_DAEMON_PYTHON=str(broken), QMD_START_TIMEOUT="2")
    params = StdioServerParameters(command=command, args=args, env=env, cwd=indexed["proj"])
    fresh = "def frobnicate_the_widget():\n    return 42\n"
    (indexed["proj"] / "fresh.py").write_text(fresh, encoding="utf-8")
    with (tmp_path / "server.err").open("w+", encoding="utf-8") as errlog:
        client = stdio_client(params, errlog=errlog)
        async with client as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            first = await session.call_tool("search", {"query": "TCPConnector"})
            second = await session.call_tool("search", {"query": "frobnicate_the_widget"})
            bad = await session.call_tool("search", {"query": "x", "collections": ["nope"]})
        errlog.seek(0)
        said = errlog.read()
    assert not first.is_error and not second.is_error, (_text(first), _text(second))
    assert _hits(first)[0]["path"] == "pool/conn.go"
    assert _hits(second)[0]["path"] == "fresh.py"  # the one-off search refreshed first
    assert bad.is_error and "no collection named 'nope'" in _text(bad)
    lines = [line for line in said.splitlines() if "daemon unavailable" in line]
    assert len(lines) == 1, said
    assert lines[0].startswith("qmd-daemon mcp: daemon unavailable (the daemon exited at start") and (
        lines[0].endswith("; searching in-process")
    )
    assert state_of(indexed["home"]) is None


async def test_after_daemons_crashed_twice_in_a_row_the_server_starts_none_and_says_why_once(
    indexed: dict[str, Any], tmp_path: Path
) -> None:
    """The clients' crash back-off (clients/_qmd_client.py backing_off) holds for the server's
    searches too: in-process at once, no daemon started, its line said once."""
    import time

    from clients import _qmd_client as qc

    record = indexed["home"] / "state" / qc.CRASH_FILE
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"at": time.time(), "pid": 1, "reason": "Fatal Python error: Aborted",
                                  "crashes": 2}))
    command, args = _command("mcp")
    params = StdioServerParameters(command=command, args=args, env=_env(indexed["home"]), cwd=indexed["proj"])
    with (tmp_path / "server.err").open("w+", encoding="utf-8") as errlog:
        client = stdio_client(params, errlog=errlog)
        async with client as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            results = [await session.call_tool("search", {"query": "TCPConnector"}) for _ in range(2)]
        errlog.seek(0)
        said = errlog.read()
    assert all(_hits(result)[0]["path"] == "pool/conn.go" for result in results)
    lines = [line for line in said.splitlines() if "daemon unavailable" in line]
    assert len(lines) == 1, said
    assert lines[0].startswith("qmd-daemon mcp: daemon unavailable (the daemon crashed twice in a row, last")
    assert "(Fatal Python error: Aborted): searches run in-process until " in lines[0]
    assert state_of(indexed["home"]) is None  # none started: no daemon.log either
    assert not (indexed["home"] / "state" / "logs" / "daemon.log").exists()
