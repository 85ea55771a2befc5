"""Pure functions of the setup: instruction block, hook-entry merge, journal rollback, MCP server."""

from __future__ import annotations

import io
import json
from pathlib import Path

from qmd_daemon.mcp_server import McpServer
from qmd_daemon.setup import integrations as integ
from qmd_daemon.setup.journal import Journal


def test_instruction_block_round_trips():
    for original in ("", "# Rules\n", "# Rules\n\nBe brief.\n"):
        added = integ.with_instruction(original)
        assert integ.INSTRUCTION in added
        assert integ.with_instruction(added) == added  # idempotent
        assert integ.without_instruction(added) == (original or "\n")


def test_hook_entries_are_merged_and_only_ours_are_stripped():
    mine = {"hooks": [{"type": "command", "command": "echo mine"}]}
    ours = {"matcher": "startup", "hooks": [{"type": "command", "command": "sh /x/qmd-session-start.sh"}]}
    mixed = {
        "hooks": [
            {"type": "command", "command": "echo a"},
            {"type": "command", "command": "sh '/x/qmd-auto-retrieve.sh'"},
            {"type": "command", "command": "my qmd-session-start-wrapper thing"},
        ]
    }
    stripped = integ._strip_ours({"SessionStart": [mine, ours], "UserPromptSubmit": [mixed], "Stop": [ours]})
    assert stripped == {
        "SessionStart": [mine],
        "UserPromptSubmit": [
            {
                "hooks": [
                    {"type": "command", "command": "echo a"},
                    {"type": "command", "command": "my qmd-session-start-wrapper thing"},
                ]
            }
        ],
    }


def test_json_is_rewritten_in_the_files_own_style():
    assert integ._dump_like({"a": 1}, '{"b": 2}') == '{"a": 1}'
    assert integ._dump_like({"a": 1}, '{\n    "b": 2\n}\n') == '{\n    "a": 1\n}\n'


def test_journal_rollback_restores_files_and_removes_new_folders(tmp_path: Path):
    existing = tmp_path / "kept.txt"
    existing.write_text("old")
    journal = Journal(echo=lambda _: None)
    journal.write_file(existing, "new")
    journal.write_file(tmp_path / "a" / "b" / "new.txt", "x")
    assert journal.rollback() == []
    assert existing.read_text() == "old"
    assert not (tmp_path / "a").exists()


class _Hit:
    def to_dict(self):
        return {"path": "x.py", "line": 1, "end_line": 2, "score": 0.9, "snippet": "s", "collection": "c"}


class _Engine:
    def search(self, query, collections, limit):
        return [_Hit()] if query == "retry" else []

    def read_indexed_text(self, collection, path):
        return "one\ntwo\nthree\n"


def test_mcp_server_lists_and_calls_tools():
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "retry"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "get", "arguments": {"collection": "c", "path": "x.py", "start": 2, "end": 3}},
        },
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "nope", "arguments": {}}},
    ]
    out = io.StringIO()
    McpServer(_Engine()).serve(io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["id"] for r in replies] == [1, 2, 3, 4, 5]  # no reply to the notification
    assert replies[0]["result"]["serverInfo"]["name"] == "qmd-daemon"
    assert {t["name"] for t in replies[1]["result"]["tools"]} == {"search", "get"}
    assert json.loads(replies[2]["result"]["content"][0]["text"])[0]["path"] == "x.py"
    assert replies[3]["result"]["content"][0]["text"] == "two\nthree\n"
    assert replies[4]["result"]["isError"] is True
