"""Completion on the input line: `/` opens the command menu (with descriptions) as you type; `@` completes
paths git knows. Enter sends, Esc+Enter or Alt+Enter adds a newline (see input.py for the keys)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from kimi_cli.frontends.terminal.slash_registry import CommandRegistry
from kimi_cli.util.sanitize import visible

MAX_PATHS = 50


class KimiCompleter(Completer):
    """`/` at the start completes slash commands (the registry: built-ins and user commands alike)."""

    def __init__(self, registry: CommandRegistry, paths: Callable[[], list[str]]) -> None:
        self.registry = registry
        self.paths = paths
        self._cache: list[str] | None = None

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for command in self.registry.matching(text[1:]):
                meta = command.description
                if command.source != "built-in":
                    meta += f" ({command.source})"
                yield Completion(
                    "/" + command.name,
                    start_position=-len(text),
                    display=visible(command.usage or "/" + command.name, one_line=True),  # the argument-hint too
                    display_meta=visible(meta, one_line=True),
                )
            return
        word = text.split()[-1] if text.split() and not text.endswith((" ", "\n")) else ""
        if word.startswith("@"):
            if self._cache is None:
                self._cache = self.paths()
            needle = word[1:]
            shown = 0
            for path in self._cache:
                if needle in path:
                    yield Completion("@" + path, start_position=-len(word), display=visible("@" + path, one_line=True))
                    shown += 1
                    if shown >= MAX_PATHS:
                        return
