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

This module reads `.kimi/config.toml` itself; the other files belong to the extensions that know them (hooks,
commands, MCP servers, language servers), which sit above hostsafe. Each hands its reader down as a
FolderReader (kimi_cli.extensions.folder_readers assembles them, kimi_cli.extensions.hand_down_to_trust installs
them at start): a snapshot is never read without them (read_project refuses), so no folder's hooks or servers
can miss the trust question because a reader was not there.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    # The extensions' parts (their types are theirs: kimi_cli.extensions.hooks.config.Hook, ...custom_commands.
    # loader.CustomCommand), each filled by its FolderReader:
    kimi_hooks: list[Any] = field(default_factory=list)  # [[hooks.EVENT]] of .kimi/config.toml
    claude_hooks: list[Any] = field(default_factory=list)  # .claude/settings.json and settings.local.json
    hook_pins: dict[Any, dict[str, str]] = field(default_factory=dict)  # workspace scripts each hook names
    # (file, server name) -> (the folder its command line is read in, digests of the workspace files it names)
    server_pins: dict[tuple[str, str], tuple[Path, dict[str, str]]] = field(default_factory=dict)
    commands: list[Any] = field(default_factory=list)  # project commands, in kimi_cli's ROOTS order
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


Ask = tuple[str, Any, str]  # (key, value, words): one thing a folder's files ask for that widens


@dataclass(frozen=True)
class FolderReader:
    """One extension's part of the snapshot, handed down from the extension that owns those files: `read` fills
    its fields of the snapshot (after .kimi/config.toml is read), `widenings` says what of them widens, for the
    trust digest (kimi_cli.hostsafe.trust.file_widenings). Nothing in hostsafe knows hooks, commands or MCP."""

    package: str  # the extension it speaks for: "kimi_cli.extensions.hooks"
    read: Callable[[ProjectSettings], None]
    widenings: Callable[[ProjectSettings], list[Ask]]


_READERS: tuple[FolderReader, ...] | None = None


def use_readers(readers: Sequence[FolderReader]) -> None:
    """The extensions' readers for every snapshot of this process (kimi_cli.extensions.hand_down_to_trust)."""
    global _READERS
    if not readers:
        raise ValueError("folder trust needs the extensions' readers: an empty list would read no folder file")
    _READERS = tuple(readers)


def installed_readers() -> tuple[FolderReader, ...]:
    """The readers use_readers installed; none installed refuses (a snapshot without them would let a folder's
    hooks or MCP servers skip the trust question)."""
    if _READERS is None:
        raise RuntimeError(
            "the extensions' folder readers are not installed: call kimi_cli.extensions.hand_down_to_trust() "
            "before a folder's settings are read"
        )
    return _READERS


def read_project(folder: Path) -> ProjectSettings:
    """Read the folder's own settings once (bounded reads; unreadable files keep their error for later), each
    extension's files by its installed reader (never a chosen few: a reader left out is a file kind no question
    covers)."""
    from kimi_cli.util.paths import is_users_own

    readers = installed_readers()
    folder = folder.resolve()
    if is_users_own(folder):
        return ProjectSettings(folder, users_own=True)
    project = ProjectSettings(folder)
    if (folder / ".kimi").is_dir():
        _read_config(project)
    for reader in readers:
        reader.read(project)
    # What the files just read ask for, each said by the extension that knows them (kimi_cli.hostsafe.trust
    # digests these with the widening settings), in the readers' order
    project.file_asks = [ask for reader in readers for ask in reader.widenings(project)]
    return project


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
