"""Every search entry point takes its defaults and bounds from one home (search/limits.py and
SearchOptions): the CLI as click parses it, the HTTP API as its parser reads a body, the MCP tool as
its schema says."""

from __future__ import annotations

from typing import Any

import click
import pytest

from qmd_daemon.cli import cli
from qmd_daemon.daemon.api import parse_search
from qmd_daemon.errors import RequestError
from qmd_daemon.search import limits
from qmd_daemon.search.limits import DEFAULTS


def _parse_cli(command: str, *args: str) -> dict[str, Any]:
    """The parameters click hands the command for `args` (real option parsing, nothing run)."""
    cmd = cli.commands[command]
    with cmd.make_context(command, ["some query", *args]) as ctx:
        return dict(ctx.params)


def test_cli_search_defaults_are_the_homes() -> None:
    params = _parse_cli("search")
    assert params["limit"] == DEFAULTS.limit
    assert params["per_file"] == DEFAULTS.per_file
    assert (params["max_tokens"] or None) == DEFAULTS.max_tokens
    assert params["min_score"] == DEFAULTS.min_score
    assert (params["budget_ms"] or None) == DEFAULTS.budget_ms
    assert (params["vectors"], params["expand"], params["rerank"]) == (
        DEFAULTS.vectors, DEFAULTS.expand, DEFAULTS.rerank
    )


def test_context_defaults_are_the_homes() -> None:
    params = _parse_cli("context")
    assert (params["limit"], params["max_tokens"]) == (limits.CONTEXT_LIMIT, limits.CONTEXT_MAX_TOKENS)


@pytest.mark.parametrize(
    ("option", "key", "high"),
    [
        ("--limit", "limit", limits.MAX_LIMIT),
        ("--per-file", "per_file", limits.MAX_PER_FILE),
        ("--max-tokens", "max_tokens", limits.MAX_TOKENS_CAP),
        ("--budget-ms", "budget_ms", limits.MAX_BUDGET_MS),
    ],
)
def test_cli_and_api_share_the_bounds(option: str, key: str, high: float) -> None:
    number = str(int(high))
    assert _parse_cli("search", option, number)[key] == high
    assert parse_search({"query": "q", key: high}) is not None
    too_high = str(int(high) + 1)
    with pytest.raises(click.BadParameter):
        _parse_cli("search", option, too_high)
    with pytest.raises(RequestError):
        parse_search({"query": "q", key: int(high) + 1})


def test_api_defaults_are_the_homes() -> None:
    req = parse_search({"query": "q"})
    assert req.limit == DEFAULTS.limit
    options = req.options
    assert (options.per_file, options.max_tokens, options.min_score, options.budget_ms) == (
        DEFAULTS.per_file, DEFAULTS.max_tokens, DEFAULTS.min_score, DEFAULTS.budget_ms
    )
    assert (options.vectors, options.expand, options.rerank, options.rerank_candidates) == (
        DEFAULTS.vectors, DEFAULTS.expand, DEFAULTS.rerank, DEFAULTS.rerank_candidates
    )


async def test_mcp_schema_defaults_are_the_homes() -> None:
    pytest.importorskip("mcp.server.mcpserver")
    from qmd_daemon.mcp_server import build_server

    server = build_server(engine=None)  # the schema only: no tool is called
    tools = {tool.name: tool for tool in await server.list_tools()}
    schema = tools["search"].input_schema["properties"]
    assert schema["limit"]["default"] == DEFAULTS.limit and schema["limit"]["maximum"] == limits.MAX_LIMIT
    assert schema["min_score"]["default"] == DEFAULTS.min_score
    assert (schema["max_tokens"]["default"] or None) == DEFAULTS.max_tokens
    assert schema["max_tokens"]["maximum"] == limits.MAX_TOKENS_CAP
