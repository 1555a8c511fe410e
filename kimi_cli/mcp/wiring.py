"""Wiring MCP into a session: start the servers early, and turn ready servers' tools into agent tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kimi_cli.logs import log_dir
from kimi_cli.mcp.config import config_paths, load_servers
from kimi_cli.mcp.manager import McpManager
from kimi_cli.mcp.naming import assign_names
from kimi_cli.mcp.tool import McpApprover, McpTool


def start_mcp(workdir: Path, extra_files: list[str]) -> McpManager | None:
    """Load the configuration (ConfigError on a bad file) and start every enabled server in the background.
    Nothing is imported from the MCP SDK when no server is configured."""
    extra = [Path(p).expanduser() for p in extra_files]
    if not extra and not any(p.is_file() for p in config_paths(workdir)):
        return None
    servers = load_servers(workdir, extra)
    if not any(s.enabled for s in servers.values()):
        return None
    manager = McpManager(servers, log_dir())
    manager.start()
    return manager


def mcp_tools(manager: McpManager, approver: McpApprover, taken: set[str]) -> tuple[list[McpTool], list[str]]:
    """Tools of every ready server, with stable unique names, and a notice for each server that failed."""
    manager.wait_settled()
    pairs: list[tuple[str, str]] = []
    by_pair: dict[tuple[str, str], Any] = {}
    notices: list[str] = []
    for name, state in manager.states.items():
        if state.status != "ready":
            notices.append(
                f"MCP server {name!r} is not available ({state.error or state.status}); its tools are left out"
            )
            continue
        for tool in state.tools:
            if state.config.wants(tool.name):
                pairs.append((name, tool.name))
                by_pair[(name, tool.name)] = tool
    names = assign_names(pairs, taken)
    tools: list[McpTool] = []
    for server, tool in sorted(pairs):
        made = McpTool(manager, server, manager.states[server].config, by_pair[(server, tool)],
                       names[(server, tool)], approver)  # fmt: skip
        if made.schema_problem:  # one tool with a schema we cannot convert is left out; its server stays
            notices.append(
                f"MCP server {server!r}: tool {tool!r} is left out, its input schema cannot be sent to the model "
                f"({made.schema_problem})"
            )
            continue
        tools.append(made)
    return tools, notices
