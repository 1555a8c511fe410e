"""Slash commands as data: a name, a one-line description, a usage and a handler.

The `/` menu, `/help` and dispatch all read one registry, so a command added here (a built-in, a
feature's command, a user's own command from a file) completes as you type `/`, shows its description
in the menu and in /help, and runs, without any other edit:

    app.commands.registry.add(SlashCommand("review", "review the staged diff", handler, source="user"))

A handler takes the text after the command name and returns EXIT to end the session, else None.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

EXIT = "exit"
Handler = Callable[[str], Awaitable[str | None]]


@dataclass
class SlashCommand:
    name: str  # without the slash
    description: str  # one line, shown in the menu and in /help
    handler: Handler
    usage: str = ""  # e.g. "/undo [N | list]"; empty: the command takes no argument
    aliases: tuple[str, ...] = ()
    source: str = "built-in"  # "built-in", or where a user or project command came from
    hidden: bool = False  # runs, but is neither completed nor listed


class CommandRegistry:
    """Ordered: /help and the menu list commands in the order they were added."""

    def __init__(self) -> None:
        self._commands: dict[str, SlashCommand] = {}

    def add(self, command: SlashCommand, replace: bool = False) -> None:
        """Add a command; a name already taken raises unless `replace` (a user command never silently
        shadows a built-in: the caller decides)."""
        name = command.name.lstrip("/")
        if not name or any(c.isspace() for c in name):
            raise ValueError(f"invalid slash command name {command.name!r}")
        if name in self._commands and not replace:
            raise ValueError(f"/{name} is already a command ({self._commands[name].source})")
        command.name = name
        self._commands[name] = command

    def remove(self, name: str) -> None:
        self._commands.pop(name.lstrip("/"), None)

    def get(self, name: str) -> SlashCommand | None:
        found = self._commands.get(name)
        if found is not None:
            return found
        return next((c for c in self._commands.values() if name in c.aliases), None)

    def listed(self) -> list[SlashCommand]:
        return [c for c in self._commands.values() if not c.hidden]

    def matching(self, prefix: str) -> list[SlashCommand]:
        """Commands whose name starts with `prefix` (then those that merely contain it), for the menu."""
        listed = self.listed()
        starts = [c for c in listed if c.name.startswith(prefix)]
        return starts + [c for c in listed if prefix and prefix in c.name and c not in starts]

    def suggest(self, name: str) -> str | None:
        close = difflib.get_close_matches(name, [c.name for c in self.listed()], n=1)
        return close[0] if close else None
