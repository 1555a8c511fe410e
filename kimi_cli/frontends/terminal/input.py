"""The input line: one prompt_toolkit application alive for the whole session, turns running beside it.

Why one application: a prompt started and stopped around each question (the old design) replaced the
event loop's SIGINT handler with its own and then removed it, so after the first approval Ctrl-C reached
a loop with no handler and was dropped. Here the terminal stays in raw mode for the whole session, so Esc
and Ctrl-C are keys, seen by the key bindings below whatever runs (a stream, a command, a question).
Output printed meanwhile goes above the prompt (prompt_toolkit's patch_stdout).

What it shows, bottom up: the status line; the input line (`❯`); the question being asked, if any; the
messages typed during a turn, queued. Enter on the input line hands the text to `on_submit` (Esc+Enter,
Alt+Enter or a backslash before Enter adds a newline); while a turn runs the session queues it (↑ on an empty
line takes the last one back for editing, deleting it drops it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.keys import Keys

from kimi_cli.frontends.terminal.choose import Choices
from kimi_cli.frontends.terminal.status import SessionStatus
from kimi_cli.util.sanitize import visible

PROMPT = "❯ "
EXIT_WINDOW = 2.5  # seconds in which a second Ctrl-C at an empty prompt exits
TICK = 0.2  # status refresh while a turn runs (spinner, elapsed time)
ESC_WAIT = 0.25  # seconds a lone Esc waits for a key after it (Esc then Enter is a newline)


@dataclass
class Question:
    """A question in the input area. `keys`: single-key answers (else a line of text is read).
    `interrupts`: Esc and Ctrl-C cancel the running turn (approvals) rather than answer ''."""

    prompt: str
    keys: dict[str, str] = field(default_factory=dict)
    default: str = ""
    interrupts: bool = False
    first_keys: dict[str, str] = field(default_factory=dict)  # a text question's one-key answers on an empty line
    choices: Choices | None = None  # a picker: ↑/↓ and Enter answer the index picked, typing filters, Esc ''
    future: asyncio.Future[str] | None = None
    draft: Document | None = None  # what the user was typing, put back afterwards


class InputLine:
    """The prompt, the queue of typed-ahead messages and the questions, in one application."""

    def __init__(
        self,
        status: SessionStatus,
        completer: Completer,
        history_path: Path | None,
        on_submit: Callable[[str], None],
        on_interrupt: Callable[[str], None],
        on_exit: Callable[[], None],
        on_expand: Callable[[], None] | None = None,
    ) -> None:
        self.status = status
        self.on_submit = on_submit
        self.on_interrupt = on_interrupt
        self.on_exit = on_exit
        self.on_expand = on_expand
        self.busy = False
        self.queued: list[str] = []
        self.question: Question | None = None
        self._armed_exit = 0.0
        self._ticker: asyncio.Task[None] | None = None
        self.custom_line: Callable[[], str] | None = None  # [status_line]'s line, shown above the status line
        from prompt_toolkit.key_binding import merge_key_bindings

        self.bindings = KeyBindings()  # features add theirs here (e.g. Shift+Tab for modes); they take priority
        self.session: PromptSession[str] = PromptSession(
            history=_history(history_path),
            completer=completer,
            complete_while_typing=Condition(self._completing),
            key_bindings=merge_key_bindings([self._key_bindings(), self.bindings]),
            multiline=True,
            bottom_toolbar=self._toolbar,
            prompt_continuation="… ",
            reserve_space_for_menu=6,
            erase_when_done=True,
        )

    # --- running -----------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Until exit(): Enter never ends the application, it hands the line over (see _enter)."""
        self.app.timeoutlen = ESC_WAIT  # how long a lone Esc waits for a following key
        self.app.ttimeoutlen = 0.05
        await self.session.prompt_async(self._message, handle_sigint=False)

    @property
    def app(self) -> Any:
        return self.session.app

    def exit(self) -> None:
        if self.app.is_running and not self.app.future.done():
            self.app.exit(result="")

    def invalidate(self) -> None:
        if self.app.is_running:
            self.app.invalidate()

    def set_busy(self, busy: bool) -> None:
        self.busy = busy
        if busy and self._ticker is None:
            self._ticker = asyncio.ensure_future(self._tick())
        elif not busy and self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self.invalidate()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK)
            self.invalidate()

    def take_queued(self) -> list[str]:
        queued, self.queued = self.queued, []
        self.invalidate()
        return queued

    def put_back(self, text: str) -> None:
        """Text the user typed ahead, back on the input line (after a Ctrl-C it is not sent)."""
        buffer = self.app.current_buffer if self.app.is_running else self.session.default_buffer
        joined = "\n".join(t for t in (text, buffer.text) if t)
        buffer.document = Document(joined, len(joined))
        self.invalidate()

    # --- questions ---------------------------------------------------------------------------------------

    async def ask(self, question: Question) -> str:
        """Wait for the answer. Esc/Ctrl-C: the turn is interrupted (question.interrupts) or the answer is ''."""
        while self.question is not None:  # one at a time (parallel tool calls may each ask)
            assert self.question.future is not None
            await asyncio.wait({self.question.future})
        buffer = self.session.default_buffer
        question.future = asyncio.get_running_loop().create_future()
        question.draft = buffer.document
        buffer.document = Document("")
        self.question = question
        self.invalidate()
        try:
            return await question.future
        finally:
            self.question = None
            buffer.document = question.draft or Document("")
            self.invalidate()

    def _answer(self, answer: str) -> None:
        if self.question is not None and self.question.future is not None and not self.question.future.done():
            self.question.future.set_result(answer)

    # --- what is shown -----------------------------------------------------------------------------------

    def _width(self) -> int:
        try:
            return int(self.app.output.get_size().columns)
        except Exception:
            return 80

    def _message(self) -> FormattedText:
        width = self._width()
        parts: list[tuple[str, str]] = []
        for text in self.queued:
            first = " ".join(text.split())
            room = max(width - 14, 10)
            first = first if len(first) <= room else first[: room - 1] + "…"
            parts.append(("class:queued", f"  queued: {visible(first, one_line=True)}\n"))
        if self.queued:
            hint = "  ↑ edits · sent when the turn ends · ctrl-s: into this turn · esc: interrupt, send now"
            parts.append(("class:hint", _fit(hint, width)))
            parts.append(("", "\n"))
        if self.question is not None:
            if self.question.choices is not None:  # the list above the question; the input line is the filter
                parts += self.question.choices.fragments(self.session.default_buffer.text, width)
            return FormattedText([*parts, ("class:question bold", self.question.prompt)])
        return FormattedText([*parts, ("class:prompt bold", PROMPT)])

    def _toolbar(self) -> str:
        line = " " + self.status.line(self._width() - 2)
        custom = self.custom_line() if self.custom_line is not None else ""
        return f" {_fit(custom, self._width() - 2)}\n{line}" if custom else line  # [status_line] above ours

    def _completing(self) -> bool:
        if self.question is not None:
            return False
        text = self.session.default_buffer.document.text_before_cursor
        word = text.split()[-1] if text.split() and not text.endswith((" ", "\n")) else ""
        return (text.startswith("/") and " " not in text) or word.startswith("@")

    # --- keys --------------------------------------------------------------------------------------------

    def _key_bindings(self) -> KeyBindings:
        kb = KeyBindings()
        asking_keys = Condition(lambda: self.question is not None and bool(self.question.keys))
        busy_or_asking = Condition(lambda: self.busy or self.question is not None)
        can_edit_queued = Condition(
            lambda: bool(self.queued) and self.question is None and not self.session.default_buffer.text
        )

        @kb.add("enter")
        @kb.add("c-j")  # what some terminals (and pexpect's sendline) send for Enter
        def _enter(event: Any) -> None:
            buffer = event.current_buffer
            if self.question is not None and self.question.choices is not None:
                index = self.question.choices.picked(buffer.text)
                if index is not None:  # nothing kept by the filter: Enter waits (Esc cancels)
                    self._answer(str(index))
                return
            if self.question is not None:
                self._answer(self.question.default if self.question.keys else buffer.text.strip())
                return
            if buffer.document.text_before_cursor.endswith("\\"):  # `line\` Enter: a newline, as in a shell
                buffer.delete_before_cursor(1)
                buffer.insert_text("\n")
                return
            state = buffer.complete_state
            if state is not None and state.current_completion is not None:
                buffer.apply_completion(state.current_completion)
            elif state is not None and state.completions and _is_command_prefix(buffer.text):
                buffer.apply_completion(state.completions[0])  # `/he` Enter runs the first match, as shown
            text = buffer.text
            if not text.strip():
                return
            buffer.append_to_history()
            buffer.reset()
            self.on_submit(text)

        @kb.add("escape", "enter")
        def _newline(event: Any) -> None:
            if self.question is None or not self.question.keys:
                event.current_buffer.insert_text("\n")

        # Not eager: Esc then Enter (Alt+Enter) is a newline; a lone Esc fires after ESC_WAIT seconds.
        @kb.add("escape", filter=busy_or_asking)
        def _escape(event: Any) -> None:
            self._cancel("esc")

        @kb.add("c-c")
        def _ctrl_c(event: Any) -> None:
            if self.question is not None or self.busy:
                self._cancel("ctrl-c")
                return
            buffer = event.current_buffer
            if buffer.text:
                buffer.reset()
                self._armed_exit = 0.0
                return
            now = time.monotonic()
            if now - self._armed_exit < EXIT_WINDOW:
                self.on_exit()
                return
            self._armed_exit = now
            self.status.flash("press Ctrl-C again to exit (or Ctrl-D)", EXIT_WINDOW)
            self.invalidate()
            asyncio.get_running_loop().call_later(EXIT_WINDOW, self.invalidate)

        @kb.add("c-d")
        def _ctrl_d(event: Any) -> None:
            buffer = event.current_buffer
            if buffer.text:
                buffer.delete()
            elif self.question is not None:
                self._cancel("ctrl-d")
            elif not self.busy:
                self.on_exit()

        picking = Condition(lambda: self.question is not None and self.question.choices is not None)

        @kb.add("up", filter=picking)
        @kb.add("c-p", filter=picking)
        def _pick_up(event: Any) -> None:
            assert self.question is not None and self.question.choices is not None
            self.question.choices.move(-1, event.current_buffer.text)

        @kb.add("down", filter=picking)
        @kb.add("c-n", filter=picking)
        @kb.add("tab", filter=picking)
        def _pick_down(event: Any) -> None:
            assert self.question is not None and self.question.choices is not None
            self.question.choices.move(1, event.current_buffer.text)

        @kb.add("up", filter=can_edit_queued)
        def _edit_queued(event: Any) -> None:
            text = self.queued.pop()
            event.current_buffer.document = Document(text, len(text))

        @kb.add("c-o")
        def _expand(event: Any) -> None:
            if self.on_expand is not None:
                self.on_expand()

        @kb.add(Keys.Any, filter=asking_keys)
        def _key(event: Any) -> None:
            assert self.question is not None
            answer = self.question.keys.get(event.data.lower())
            if answer is not None:
                self._answer(answer)

        first_key = Condition(
            lambda: self.question is not None and bool(self.question.first_keys)
            and not self.session.default_buffer.text
        )  # fmt: skip

        @kb.add(Keys.Any, filter=first_key)
        def _first_key(event: Any) -> None:
            assert self.question is not None
            answer = self.question.first_keys.get(event.data.lower())
            if answer is not None:
                self._answer(answer)
            else:
                event.current_buffer.insert_text(event.data)

        @kb.add("backspace", filter=asking_keys)
        @kb.add("tab", filter=asking_keys)
        def _ignore(event: Any) -> None:
            return

        return kb

    def _cancel(self, key: str) -> None:
        """Esc or Ctrl-C: a question that interrupts cancels the turn; other questions answer ''."""
        question = self.question
        if question is not None and not question.interrupts:
            self._answer("")
            return
        self.on_interrupt(key)


def _is_command_prefix(text: str) -> bool:
    return text.startswith("/") and not any(c.isspace() for c in text)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def _history(path: Path | None) -> History:
    if path is None:
        return InMemoryHistory()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return FileHistory(str(path))
    except OSError:
        return InMemoryHistory()
