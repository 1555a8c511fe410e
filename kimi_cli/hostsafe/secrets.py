"""The environment variables kimi takes its API key from: the one table, by provider.

config.py's provider defaults read their key variables from here (never the reverse), and every program kimi
starts is given its environment without any of them: MCP servers (kimi_cli.extensions.mcp.host_launch), hooks
(kimi_cli.extensions.hooks.runner), host git and the hooks it runs (kimi_cli.hostsafe.git.host), and sandboxed
commands (kimi_cli.sandbox.env). A variable of another provider's counts too: whichever one kimi reads now, the
others may hold a key the user keeps for kimi. A program gets one back only where the user names it for that
program (an MCP server's own `env`).
"""

from __future__ import annotations

from collections.abc import Mapping

# provider -> the variables its key is read from, first found wins.
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "moonshot": ("KIMI_API_KEY", "MOONSHOT_API_KEY"),
    "local": ("KIMI_API_KEY",),
    "openai": ("KIMI_API_KEY", "OPENAI_API_KEY"),
}
# Every provider's, in table order: what no program kimi starts inherits.
ALL_KEY_VARIABLES: tuple[str, ...] = tuple(dict.fromkeys(name for names in KEY_VARIABLES.values() for name in names))


def key_variables(provider: str) -> tuple[str, ...]:
    """The variables the provider's key is read from (unknown providers: none)."""
    return KEY_VARIABLES.get(provider, ())


def named(provider: str) -> str:
    """The provider's key variables for a message: `KIMI_API_KEY / MOONSHOT_API_KEY`."""
    return " / ".join(key_variables(provider) or KEY_VARIABLES["local"])


def without_keys(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of `environ` without any variable kimi reads its key from."""
    return {name: value for name, value in environ.items() if name not in ALL_KEY_VARIABLES}
