"""Hook configuration: `[[hooks.EVENT]]` tables in ~/.kimi/config.toml and (trusted folders only)
.kimi/config.toml. Claude Code's settings files are read by kimi_cli.extensions.hooks.claude; hooks.sources puts
them all together in the order they run.

    [[hooks.PreToolUse]]
    matcher = "Shell"            # tool-name pattern; omitted = every tool
    command = "python3 .kimi/hooks/guard.py"
    timeout = 60
    on_failure = "continue"      # "block": a hook that crashes or times out blocks, as exit 2 would

The user's hooks and the project's are read from their own files (the merged config would let the project's
list of an event replace the user's); the project's only when kimi_cli.hostsafe.trust says the folder may widen what
kimi does.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.config import HOOK_EVENTS, HooksTable

TOOL_EVENTS = ("PreToolUse", "PostToolUse")

# Claude Code's tool names -> kimi's: a matcher written for Claude Code ("Bash", "Edit|Write") matches the
# kimi tool that does the same. One line per tool; keep it data.
CLAUDE_TOOL_NAMES: dict[str, str] = {
    "Bash": "Shell",
    "Read": "ReadFile",
    "Write": "WriteFile",
    "Edit": "StrReplaceFile",
    "MultiEdit": "StrReplaceFile",
    "Glob": "Glob",
    "Grep": "Grep",
    "TodoWrite": "SetTodoList",
    "Task": "Agent",
    "WebFetch": "FetchURL",
    "WebSearch": "SearchWeb",
    "BashOutput": "TaskOutput",
    "KillShell": "TaskStop",
}


@dataclass(frozen=True)
class Hook:
    """A hook ready to run: its event, where it came from ("user" or "project") and its settings."""

    event: str
    command: str
    matcher: str | None
    timeout: float
    on_failure: str
    source: str
    index: int  # its place among the event's hooks: results are applied in config order
    dialect: str = "kimi"  # "claude": from Claude Code's settings, sees its tool names and inputs (hooks.claude)

    def matches(self, tool_name: str | None) -> bool:
        """Every hook of a non-tool event runs; a tool event's hook runs when its matcher names the tool."""
        if self.event not in TOOL_EVENTS or tool_name is None:
            return True
        return matcher_matches(self.matcher, tool_name)

    def describe(self) -> str:
        where = f" [{self.matcher}]" if self.matcher else ""
        return f"{self.event}{where}: {self.command} (timeout {self.timeout:g} s, {self.source})"


def tool_aliases(tool_name: str) -> list[str]:
    """The names a matcher may use for a kimi tool: its own, and Claude Code's for the same tool."""
    return [tool_name, *(claude for claude, kimi in CLAUDE_TOOL_NAMES.items() if kimi == tool_name)]


def matcher_matches(matcher: str | None, tool_name: str) -> bool:
    """Omitted, "" or "*": every tool. Otherwise the pattern must match a whole name, read as a glob
    (`mcp__github__*`) or as a regular expression (`Edit|Write`, `mcp__memory__.*`); an exact name is both."""
    if matcher is None or matcher.strip() in ("", "*"):
        return True
    pattern = matcher.strip()
    try:
        regex: re.Pattern[str] | None = re.compile(pattern)
    except re.error:
        regex = None
    for name in tool_aliases(tool_name):
        if fnmatch.fnmatchcase(name, pattern):
            return True
        if regex is not None and regex.fullmatch(name):
            return True
    return False


def hooks_from(table: object, source: str) -> list[Hook]:
    """Validated hooks from a config file's `hooks` table (the config loader already reported bad ones)."""
    from pydantic import TypeAdapter, ValidationError

    if not isinstance(table, dict):
        return []
    try:
        parsed = TypeAdapter(HooksTable).validate_python(table)
    except ValidationError:
        return []
    out: list[Hook] = []
    for event in HOOK_EVENTS:
        for index, item in enumerate(parsed.get(event, [])):  # type: ignore[call-overload]
            out.append(Hook(event, item.command, item.matcher, item.timeout, item.on_failure, source, index))
    return out


def _table(path: Path) -> object:
    try:
        from kimi_cli.hostsafe.settings_read import read_settings_text

        return tomllib.loads(read_settings_text(path)).get("hooks")
    except (OSError, ValueError):
        return None
