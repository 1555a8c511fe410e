"""Render agent events in the terminal: streamed markdown, reasoning on its own lines, tool calls with human
titles, folded result panels. The spinner, elapsed time, tokens and cost live in the status line
(status.py), so nothing printed here is ever redrawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.console import Console, JustifyMethod
from rich.markdown import Heading, Markdown
from rich.text import Text

from kimi_cli.agent.events import (
    Compacted,
    ErrorNotice,
    Event,
    Notice,
    ReasoningDelta,
    RetryNotice,
    StepBegin,
    StepEnd,
    TextDelta,
    ToolCall,
    ToolOutput,
    UsageUpdate,
)
from kimi_cli.frontends.terminal.markdown_stream import MarkdownStream
from kimi_cli.frontends.terminal.panels import full_output, render_result
from kimi_cli.frontends.terminal.status import SessionStatus
from kimi_cli.frontends.terminal.titles import tool_title
from kimi_cli.util.sanitize import visible, visible_text

__all__ = ["LastResult", "SessionStatus", "TerminalRenderer"]


@dataclass
class LastResult:
    """The last tool call's whole output, for `/last` and Ctrl-O."""

    title: str
    output: str
    is_error: bool


class TerminalRenderer:
    """Consumes agent events. Output is printed once, above the input line, and never redrawn."""

    def __init__(self, console: Console, status: SessionStatus) -> None:
        self.console = console
        self.status = status
        self.show_reasoning = False
        self._md = MarkdownStream(self._print_block)
        self._reasoning = ""  # reasoning not yet printed (shown line by line when /reasoning is on)
        self._reasoning_chars = 0
        self._reasoning_open = False
        self._titles: dict[str, str] = {}
        self._open: set[str] = set()  # calls announced and not answered yet
        self._last_header = ""
        self._blocks = 0  # markdown blocks printed since the last tool call (a blank line between them)
        self.last: LastResult | None = None

    # --- events ---------------------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event)

    def _on_step_begin(self, event: StepBegin) -> None:
        self._reasoning_chars = 0
        self.status.phase = "thinking"

    def _on_reasoning_delta(self, event: ReasoningDelta) -> None:
        self._reasoning_chars += len(event.text)
        if not self.show_reasoning:
            self.status.phase = f"thinking ({_count(self._reasoning_chars)} chars)"
            return
        self._reasoning += event.text
        if "\n" in self._reasoning:
            done, _, self._reasoning = self._reasoning.rpartition("\n")
            self._print_reasoning(done)

    def _print_reasoning(self, text: str) -> None:
        if not text.strip() and not self._reasoning_open:
            return
        self._reasoning_open = True
        self.console.print(visible_text(text, "dim italic"))

    def _end_reasoning(self) -> None:
        """Whatever reasoning is left, on its own line: the answer always starts on a fresh line."""
        if self._reasoning.strip():
            self._print_reasoning(self._reasoning)
        self._reasoning = ""
        if self._reasoning_open:
            self._reasoning_open = False
            self.console.print()

    def _on_text_delta(self, event: TextDelta) -> None:
        self._end_reasoning()
        self.status.phase = "answering"
        self._md.feed(event.text)

    def _print_block(self, block: str) -> None:
        # Escapes written out before Markdown sees them; links shown with their address, not hidden behind text.
        if self._blocks:
            self.console.print()  # paragraphs of one answer keep their blank line
        self._blocks += 1
        self.console.print(AnswerMarkdown(visible(block), hyperlinks=False))

    def _on_tool_call(self, event: ToolCall) -> None:
        self._end_reasoning()
        self._md.close()
        self._blocks = 0
        title = tool_title(event.name, event.arguments)
        self._titles[event.id] = title
        if not self._open:  # calls running beside it show their header with their result
            self._header(event.id, title)
        self._open.add(event.id)
        self.status.phase = f"running {visible(event.name, one_line=True)}"

    def _header(self, call_id: str, title: str, style: str = "bold cyan") -> None:
        line = Text("⏺ ", style="cyan")
        line.append_text(visible_text(title, style, one_line=True))
        line.truncate(max(self.console.width, 20), overflow="ellipsis")
        self.console.print(line, no_wrap=True, overflow="ellipsis", crop=True)
        self._last_header = call_id

    def _on_tool_result(self, event: ToolOutput) -> None:
        title = self._titles.pop(event.id, event.name)
        self._open.discard(event.id)
        if event.id != self._last_header:  # parallel calls: say which call this result answers
            self._header(event.id, title)
        self.console.print(render_result(event, self.console.width))
        self.last = LastResult(title, full_output(event), event.is_error)
        self.status.phase = "thinking"

    def _on_usage(self, event: UsageUpdate) -> None:
        self.status.add(event.usage)

    def _on_step_end(self, event: StepEnd) -> None:
        self._end_reasoning()
        self._md.close()

    def _on_retry(self, event: RetryNotice) -> None:
        self.console.print(visible_text(f"↻ retry {event.attempt} in {event.wait_s:.1f}s: {event.error}", "yellow"))

    def _on_error(self, event: ErrorNotice) -> None:
        self.console.print(visible_text(f"✗ {event.message}", "red"))

    def _on_notice(self, event: Notice) -> None:
        self.console.print(visible_text(f"ℹ {event.message}", "yellow"))

    def _on_compacted(self, event: Compacted) -> None:
        self.console.print(
            Text(
                f"⟲ compacted the conversation ({event.messages_before} → "
                f"{event.messages_after} messages; ~{event.tokens_before:,} tokens before)",
                style="magenta",
            )
        )

    def finish_turn(self) -> None:
        self._end_reasoning()
        self._md.close()
        self._titles.clear()
        self._open.clear()
        self._blocks = 0


def _count(n: int) -> str:
    return f"{n:,}" if n < 10_000 else f"{n / 1000:.0f}k"


class _LeftHeading(Heading):
    """Every heading level starts at the left margin (rich centres `# h1`; an answer's title reads oddly so)."""

    LEVEL_ALIGN: ClassVar[dict[str, JustifyMethod]] = dict.fromkeys(("h1", "h2", "h3", "h4", "h5", "h6"), "left")


class AnswerMarkdown(Markdown):
    elements: ClassVar[dict[str, type[Any]]] = {**Markdown.elements, "heading_open": _LeftHeading}
