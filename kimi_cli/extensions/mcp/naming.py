"""Tool names for MCP tools: `mcp__<server>__<tool>`, safe for every provider, stable for the prompt cache."""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 64
UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def tool_name(server: str, tool: str) -> str:
    raw = f"mcp__{UNSAFE.sub('_', server)}__{UNSAFE.sub('_', tool)}"
    if len(raw) <= MAX_NAME:
        return raw
    return raw[: MAX_NAME - 7] + "_" + _short_hash(f"{server}\0{tool}")


def assign_names(pairs: list[tuple[str, str]], taken: set[str]) -> dict[tuple[str, str], str]:
    """A unique name for each (server, tool), in a deterministic order; never one of `taken` (built-ins)."""
    names: dict[tuple[str, str], str] = {}
    used = set(taken)
    for server, tool in sorted(pairs):
        name = tool_name(server, tool)
        if name in used:
            name = name[: MAX_NAME - 7] + "_" + _short_hash(f"{server}\0{tool}\0clash")
        used.add(name)
        names[(server, tool)] = name
    return names
