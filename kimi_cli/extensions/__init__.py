"""The extensions: hooks, custom commands, MCP servers, language servers and skills.

Host safety decides a folder's trust (kimi_cli.hostsafe.trust) on a snapshot of the folder's own files, most of
which belong to the extensions here, and compares its limits with kimi's defaults, which the config model holds:
both sit above hostsafe. hand_down_to_trust gives hostsafe both at start (kimi_cli.entry, kimi_cli.sdk, and the tests'
conftest), so hostsafe imports neither; without them a folder is never read (hostsafe refuses).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kimi_cli.hostsafe.project_settings import FolderReader


def folder_readers() -> tuple[FolderReader, ...]:
    """Every extension's reader of the folder files it owns, in the order their asks enter the trust digest
    (hook scripts and Claude Code hooks, commands, MCP servers' files, language servers): the one list of them
    (tests/unit/test_folder_readers.py fails on an extension that reads a folder's files and is missing here)."""
    from kimi_cli.extensions.custom_commands.loader import READER as commands
    from kimi_cli.extensions.hooks.folder import READER as hooks
    from kimi_cli.extensions.lsp.project import READER as language_servers
    from kimi_cli.extensions.mcp.folder import READER as mcp

    return (hooks, commands, mcp, language_servers)


class ConfigDefaults:
    """kimi's defaults as the config model holds them (kimi_cli.hostsafe.trust_rules.Defaults), the model imported
    when trust first compares a limit."""

    def default_of(self, pattern: str) -> Any:
        from kimi_cli.config import default_of

        return default_of(pattern)

    def headless_max_steps(self) -> int:
        from kimi_cli.config import HEADLESS_MAX_STEPS

        return HEADLESS_MAX_STEPS


def hand_down_to_trust() -> None:
    """Give folder trust what it needs from above it: the extensions' folder readers and kimi's defaults."""
    from kimi_cli.hostsafe import project_settings, trust_rules

    project_settings.use_readers(folder_readers())
    trust_rules.use_defaults(ConfigDefaults())
