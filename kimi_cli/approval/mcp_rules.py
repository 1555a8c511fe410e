"""Approval rules for MCP tools: `mcp__server__tool` or `mcp__server__*` in [approval] allow / deny."""

from __future__ import annotations

import fnmatch


def rule_matches(rules: list[str], tool_name: str) -> str | None:
    for rule in rules:
        if rule.startswith("mcp__") and fnmatch.fnmatchcase(tool_name, rule):
            return rule
    return None


def server_rule(tool_name: str) -> str:
    """The rule that allows every tool of this tool's server."""
    parts = tool_name.split("__")
    return "__".join(parts[:2]) + "__*" if len(parts) >= 3 else tool_name
