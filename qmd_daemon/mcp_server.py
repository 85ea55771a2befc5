"""`qmd-daemon mcp`: `search` and `get` over MCP (JSON-RPC 2.0, newline-delimited, on stdio).

For clients that prefer MCP to the skill (the skill stays the default path). No SDK needed: the
stdio transport is one JSON object per line; this serves `initialize`, `ping`, `tools/list` and
`tools/call`. The engine stays loaded for the life of the process, so models stay warm.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

from qmd_daemon import __version__

PROTOCOL_VERSION = "2025-06-18"
TOOLS = [
    {
        "name": "search",
        "description": "Search the indexed repositories with a question in words or an identifier; returns "
        "hits {path, line, end_line, score, snippet, collection}, best first.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "a full behavioural question, or identifiers"},
                "collections": {"type": "array", "items": {"type": "string"}},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
            },
            "required": ["query"],
        },
    },
    {
        "name": "get",
        "description": "Read an indexed file (optionally lines start..end) from a collection.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "collection": {"type": "string"},
                "path": {"type": "string", "description": "path relative to the collection root"},
                "start": {"type": "integer", "minimum": 1},
                "end": {"type": "integer", "minimum": 1},
            },
            "required": ["collection", "path"],
        },
    },
]


class McpServer:
    def __init__(self, engine: Any):
        self.engine = engine

    def call_tool(self, name: str, args: dict[str, Any]) -> str:
        if name == "search":
            query = str(args.get("query") or "").strip()
            if not query:
                raise ValueError("query is empty")
            hits = self.engine.search(
                query, args.get("collections") or None, limit=int(args.get("limit") or 10)
            )
            return json.dumps([h.to_dict() for h in hits], ensure_ascii=False)
        if name == "get":
            text = self.engine.read_indexed_text(str(args["collection"]), str(args["path"]))
            start, end = args.get("start"), args.get("end")
            if start or end:
                lines = text.splitlines(keepends=True)
                text = "".join(lines[int(start or 1) - 1 : int(end) if end else None])
            return text
        raise ValueError(f"unknown tool {name!r}")

    def handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        method, msg_id = message.get("method"), message.get("id")
        if msg_id is None:  # a notification (notifications/initialized, cancelled ...): no answer
            return None
        try:
            if method == "initialize":
                result: Any = {
                    "protocolVersion": (message.get("params") or {}).get("protocolVersion", PROTOCOL_VERSION),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "qmd-daemon", "version": __version__},
                }
            elif method == "ping":
                result = {}
            elif method == "tools/list":
                result = {"tools": TOOLS}
            elif method == "tools/call":
                params = message.get("params") or {}
                try:
                    text = self.call_tool(str(params.get("name")), dict(params.get("arguments") or {}))
                    result = {"content": [{"type": "text", "text": text}], "isError": False}
                except Exception as exc:  # a tool error is a result, not a protocol error
                    result = {"content": [{"type": "text", "text": f"error: {exc}"}], "isError": True}
            else:
                return {
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "error": {"code": -32601, "message": f"no method {method}"},
                }
        except Exception as exc:
            return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32603, "message": str(exc)}}
        return {"jsonrpc": "2.0", "id": msg_id, "result": result}

    def serve(self, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> None:
        stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
        for line in stdin:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                reply: dict[str, Any] | None = {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32700, "message": "parse error"},
                }
            else:
                reply = self.handle(message) if isinstance(message, dict) else None
            if reply is not None:
                stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
                stdout.flush()
