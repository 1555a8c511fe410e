"""A small stdio MCP server for tests, speaking plain JSON-RPC (no SDK), so its schemas are exactly as written.

  python mcp_fixture_server.py awkward     legal JSON Schema that real servers emit: a recursive $ref, a
                                           JSON-pointer $ref, boolean subschemas in anyOf; and one tool whose
                                           schema is too large to send (it must be left out, alone)
  python mcp_fixture_server.py many N      N tools (t000 ... ), each with a one-line description
  python mcp_fixture_server.py invalid     two pages of tools, some of which MCP does not allow: no
                                           inputSchema, a null one, a string, an array-rooted one

Every call answers with its tool name and arguments, as JSON text.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TREE = {
    "type": "object",
    "$defs": {
        "Node": {
            "type": "object",
            "description": "A tree node",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            },
            "required": ["name"],
        }
    },
    "properties": {"root": {"$ref": "#/$defs/Node"}},
    "required": ["root"],
}
POINTER = {
    "type": "object",
    "properties": {
        "first": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "second": {"$ref": "#/properties/first/items"},
    },
}
LOOSE = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "value": {"anyOf": [True, {"type": "string"}]},
        "count": {"anyOf": [False, {"type": "integer"}]},
        "anything": True,
        "forbidden": False,
    },
    "additionalProperties": True,
}


HUGE = {
    "type": "object",
    "properties": {f"option_{i}": {"type": "string", "description": "a setting " * 12} for i in range(1200)},
}


def awkward_tools() -> list[dict[str, Any]]:
    return [
        {"name": "tree", "description": "Walk a tree", "inputSchema": TREE},
        {"name": "pointer", "description": "Uses a JSON pointer", "inputSchema": POINTER},
        {"name": "loose", "description": "Boolean subschemas", "inputSchema": LOOSE},
        {"name": "huge", "description": "A schema too large to send", "inputSchema": HUGE},
    ]


def many_tools(count: int) -> list[dict[str, Any]]:
    topics = ["weather", "invoices", "kubernetes", "calendar", "tickets", "metrics", "billing", "dns"]
    return [
        {
            "name": f"t{i:03d}",
            "description": f"Tool {i}: reads the {topics[i % len(topics)]} records, shard {i}",
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
        }
        for i in range(count)
    ]


OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}}
INVALID_PAGES = [
    [{"name": "fine", "description": "A valid tool", "inputSchema": OBJECT},
     {"name": "bare", "description": "No inputSchema at all"},
     {"name": "nulled", "description": "A null inputSchema", "inputSchema": None}],
    [{"name": "listy", "description": "An array-rooted schema", "inputSchema": {"type": "array", "items": {}}},
     {"name": "stringy", "description": "A string for a schema", "inputSchema": "object"},
     {"name": "fine2", "description": "A valid tool on the second page", "inputSchema": OBJECT}],
]  # fmt: skip


def tools_page(mode: str, tools: list[dict[str, Any]], cursor: object) -> dict[str, Any]:
    if mode != "invalid":
        return {"tools": tools}
    return {"tools": INVALID_PAGES[1]} if cursor == "page2" else {"tools": INVALID_PAGES[0], "nextCursor": "page2"}


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "awkward"
    tools = many_tools(int(sys.argv[2])) if mode == "many" else awkward_tools()
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message:
            continue  # a notification
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            result: Any = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"fixture-{mode}", "version": "1.0"},
            }
        elif method == "tools/list":
            result = tools_page(mode, tools, params.get("cursor"))
        elif method == "tools/call":
            text = json.dumps({"tool": params.get("name"), "arguments": params.get("arguments")}, sort_keys=True)
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        elif method == "ping":
            result = {}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no method"}}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
