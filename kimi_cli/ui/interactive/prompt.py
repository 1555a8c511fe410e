"""The input line: Enter sends, Esc+Enter (or Alt+Enter) adds a newline; history; completion of /commands and @paths."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings


class KimiCompleter(Completer):
    """`/` completes slash commands at the start; `@` completes paths git knows."""

    def __init__(self, commands: list[str], paths: Callable[[], list[str]]) -> None:
        self.commands = commands
        self.paths = paths
        self._cache: list[str] | None = None

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for name in self.commands:
                if name.startswith(text[1:]):
                    yield Completion("/" + name, start_position=-len(text))
            return
        word = text.split()[-1] if text.split() and not text.endswith(" ") else ""
        if word.startswith("@"):
            if self._cache is None:
                self._cache = self.paths()
            needle = word[1:]
            shown = 0
            for path in self._cache:
                if needle in path:
                    yield Completion("@" + path, start_position=-len(word))
                    shown += 1
                    if shown >= 50:
                        return


def key_bindings() -> KeyBindings:
    kb = KeyBindings()

    @kb.add("enter")
    def _submit(event: Any) -> None:
        event.current_buffer.validate_and_handle()

    @kb.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    return kb


def make_prompt_session(history: Path | None, completer: Completer, toolbar: Callable[[], str]) -> PromptSession[str]:
    if history is not None:
        try:
            history.parent.mkdir(parents=True, exist_ok=True)
            hist: Any = FileHistory(str(history))
        except OSError:
            hist = InMemoryHistory()
    else:
        hist = InMemoryHistory()
    return PromptSession(
        history=hist,
        completer=completer,
        complete_while_typing=False,
        key_bindings=key_bindings(),
        multiline=True,
        bottom_toolbar=toolbar,
        prompt_continuation="… ",
    )
