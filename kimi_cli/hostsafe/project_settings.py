"""A folder's own settings, read once when a session starts: what trust decides on, and what kimi applies.

Everything the workspace may say about what kimi does lives in a few files: `.kimi/config.toml` (settings,
hooks, `mcp_config` files), `.kimi/mcp.json`, the `mcp_config` files it names, Claude Code's
`.claude/settings.json` and `settings.local.json` (hooks), and the command files in `.kimi/commands/` and
`.claude/commands/`. A writer can change any of them at any moment (a background command of an earlier
session). So they are read here once, each in one bounded read, and everything else takes them from this
snapshot: kimi_cli.hostsafe.trust digests what they ask for, and config, MCP, hooks and commands apply the very values
that digest covered. Nothing reads those files a second time in the session; a change is seen at the next start,
where it asks again.

Workspace scripts that hooks and MCP servers name are pinned here too (their digests); the runner and the
MCP manager compare those digests before each run, so a script changed after the read never runs.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kimi_cli.extensions.custom_commands.loader import CustomCommand
    from kimi_cli.extensions.hooks.config import Hook

CONFIG = ".kimi/config.toml"
MCP = ".kimi/mcp.json"


@dataclass(frozen=True)
class McpFile:
    """One `mcp_config` file a folder's config names: its `mcpServers`, or why it could not be used."""

    path: Path
    servers: dict[str, Any] | None
    error: str | None = None


@dataclass
class ProjectSettings:
    """The snapshot: each project file's parsed content as read once (absent files are empty)."""

    folder: Path
    users_own: bool = False  # the folder's .kimi is the user's own kimi home: nothing here is the project's
    config: dict[str, Any] = field(default_factory=dict)  # .kimi/config.toml, parsed ({} when absent or bad)
    config_present: bool = False
    config_error: str | None = None  # the message loading the config stops with
    mcp_servers: dict[str, Any] = field(default_factory=dict)  # .kimi/mcp.json `mcpServers`
    mcp_present: bool = False
    mcp_error: str | None = None
    mcp_files: dict[str, McpFile] = field(default_factory=dict)  # by the name the config writes
    kimi_hooks: list[Hook] = field(default_factory=list)  # [[hooks.EVENT]] of .kimi/config.toml
    claude_hooks: list[Hook] = field(default_factory=list)  # .claude/settings.json and settings.local.json
    hook_pins: dict[Hook, dict[str, str]] = field(default_factory=dict)  # workspace scripts each hook names
    # (file, server name) -> (the folder its command line is read in, digests of the workspace files it names)
    server_pins: dict[tuple[str, str], tuple[Path, dict[str, str]]] = field(default_factory=dict)
    commands: list[CustomCommand] = field(default_factory=list)  # project commands, in kimi_cli's ROOTS order
    # What those files (not the settings) ask for that widens, as (key, value, words), for the trust digest
    file_asks: list[tuple[str, Any, str]] = field(default_factory=list)

    @property
    def config_path(self) -> Path:
        return self.folder / CONFIG

    @property
    def mcp_path(self) -> Path:
        return self.folder / MCP

    def mcp_file(self, path: Path) -> McpFile | None:
        """The snapshot of an `mcp_config` file, by the path it is opened at."""
        return next((f for f in self.mcp_files.values() if f.path == path), None)


def read_project(folder: Path) -> ProjectSettings:
    """Read the folder's own settings once (bounded reads; unreadable files keep their error for later)."""
    from kimi_cli.util.paths import is_users_own

    folder = folder.resolve()
    if is_users_own(folder):
        return ProjectSettings(folder, users_own=True)
    project = ProjectSettings(folder)
    if (folder / ".kimi").is_dir():
        _read_config(project)
        _read_mcp(project)
        _read_mcp_files(project)
    _read_hooks(project)
    _read_commands(project)
    project.file_asks = _file_asks(project)
    return project


def _file_asks(project: ProjectSettings) -> list[tuple[str, Any, str]]:
    """What the files just read ask for, each said by the extension that knows them (kimi_cli.hostsafe.trust
    digests these with the widening settings): hook scripts, Claude Code hooks, commands, MCP servers' files."""
    from kimi_cli.extensions.custom_commands.loader import widenings as commands
    from kimi_cli.extensions.hooks.claude import widenings as claude_hooks
    from kimi_cli.extensions.hooks.pins import widenings as hook_scripts
    from kimi_cli.extensions.lsp.project import widenings as language_servers
    from kimi_cli.extensions.mcp.host_launch import widenings as server_files

    sources = (hook_scripts, claude_hooks, commands, server_files, language_servers)
    return [ask for source in sources for ask in source(project)]


def _read_config(project: ProjectSettings) -> None:
    from kimi_cli.hostsafe.settings_read import read_settings_text

    path = project.config_path
    if not path.is_file():  # as before: only a file (or a link to one) counts; /dev/zero or a FIFO is no config
        return
    project.config_present = True
    try:
        data = tomllib.loads(read_settings_text(path))
    except tomllib.TOMLDecodeError as exc:
        project.config_error = f"invalid configuration in {path}: not valid TOML ({exc})"
        return
    except OSError as exc:
        project.config_error = f"cannot read configuration file {path}: {exc.strerror}"
        return
    project.config = data


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


def _read_hooks(project: ProjectSettings) -> None:
    from kimi_cli.extensions.hooks import claude
    from kimi_cli.extensions.hooks.config import hooks_from
    from kimi_cli.hostsafe import pins

    project.kimi_hooks = hooks_from(project.config.get("hooks"), "project")
    if (project.folder / ".claude").is_dir():
        project.claude_hooks = claude.project_hooks(project.folder)
    for hook in project.kimi_hooks + project.claude_hooks:
        project.hook_pins[hook] = pins.pin(hook.command, project.folder)


def _read_commands(project: ProjectSettings) -> None:
    from kimi_cli.extensions.custom_commands.loader import ROOTS, load_from

    for source, root in ROOTS:
        if source == "project" and (project.folder / root).is_dir():
            project.commands += load_from(source, root, project.folder)
