"""What MCP reads of a folder's own files into its snapshot (kimi_cli.hostsafe.project_settings): `.kimi/mcp.json`
and the `mcp_config` files the folder's config lists, with the workspace files each stdio server's command line
names pinned; what of them widens is host_launch.widenings. Handed down as READER (kimi_cli.extensions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kimi_cli.hostsafe.project_settings import FolderReader, McpFile, ProjectSettings


def read(project: ProjectSettings) -> None:
    if (project.folder / ".kimi").is_dir():
        _read_mcp(project)
        _read_mcp_files(project)


def _read_mcp(project: ProjectSettings) -> None:
    from kimi_cli.errors import ConfigError
    from kimi_cli.extensions.mcp.config import read_file

    path = project.mcp_path
    if not path.is_file():
        return
    project.mcp_present = True
    try:
        project.mcp_servers = read_file(path)
    except ConfigError as exc:
        project.mcp_error = str(exc)
        return
    for name, server in project.mcp_servers.items():
        _pin_server(project, str(path), name, server)


def _read_mcp_files(project: ProjectSettings) -> None:
    """The `mcp_config` files the config lists, read whatever the trust (their servers are what is asked)."""
    from kimi_cli.errors import ConfigError
    from kimi_cli.extensions.mcp.config import read_file

    listed = project.config.get("mcp_config")
    for raw in [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []:
        path = Path(project.folder, Path(raw).expanduser())  # as kimi_cli.extensions.mcp.wiring opens it
        try:
            servers = read_file(path)
        except ConfigError as exc:
            project.mcp_files[raw] = McpFile(path, None, str(exc))
            continue
        project.mcp_files[raw] = McpFile(path, servers)
        for name, server in servers.items():
            _pin_server(project, str(path), name, server)


def _pin_server(project: ProjectSettings, source: str, name: str, server: Any) -> None:
    from kimi_cli.extensions.mcp.host_launch import server_pins

    if not isinstance(server, dict) or not isinstance(server.get("command"), str):
        return
    raw_args = server.get("args")
    args = [str(a) for a in raw_args] if isinstance(raw_args, list) else []
    cwd = server.get("cwd")
    root = Path(project.folder, cwd if isinstance(cwd, str) else "")
    project.server_pins[(source, name)] = (root, server_pins(server["command"], args, root))


def widenings(project: ProjectSettings) -> list[tuple[str, Any, str]]:
    from kimi_cli.extensions.mcp.host_launch import widenings as server_files

    return server_files(project)


READER = FolderReader("kimi_cli.extensions.mcp", read, widenings)
