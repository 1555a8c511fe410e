"""Render agent events in the terminal: streamed markdown, dim reasoning, tool panels, a spinner, the status."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.panel import Panel
from rich.syntax import Syntax
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
from kimi_cli.ui.interactive.markdown_stream import MarkdownStream
from kimi_cli.ui.sanitize import visible, visible_text

TODO_MARKS = {"pending": "☐", "in_progress": "◐", "done": "☑"}


@dataclass
class Pricing:
    """Dollars per million tokens."""

    input: float = 0.0
    cached_input: float = 0.0
    output: float = 0.0


@dataclass
class SessionStatus:
    """What the status line shows: model, context fill, cache share, cost, sandbox."""

    model: str
    provider: str
    window: int
    sandbox: str
    pricing: Pricing = field(default_factory=Pricing)
    context_tokens: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    running_tasks: Callable[[], int] = lambda: 0  # background commands still running
    effort: str = ""  # "effort high", or "" for a model that takes no reasoning control

    def add(self, usage: dict[str, int]) -> None:
        self.context_tokens = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        self.prompt_tokens += usage.get("prompt_tokens", 0)
        self.cached_tokens += usage.get("cached_tokens", 0)
        self.completion_tokens += usage.get("completion_tokens", 0)

    @property
    def cost(self) -> float:
        fresh = self.prompt_tokens - self.cached_tokens
        p = self.pricing
        return (fresh * p.input + self.cached_tokens * p.cached_input + self.completion_tokens * p.output) / 1e6

    def line(self) -> str:
        pct = 100 * self.context_tokens / self.window if self.window else 0
        cached = 100 * self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0
        cost = f"${self.cost:.3f}" if any(vars(self.pricing).values()) else "cost n/a"
        tasks = self.running_tasks()
        running = f" · {tasks} task{'s' if tasks != 1 else ''} running" if tasks else ""
        model = f"{self.model} ({self.effort})" if self.effort else self.model
        return (
            f"{model} · {self.provider} · ctx {self.context_tokens:,}/{self.window:,} ({pct:.1f}%) · "
            f"cached {cached:.0f}% · {cost} · sandbox {self.sandbox}{running}"
        )


class TerminalRenderer:
    """Consumes agent events. Output is printed once and never redrawn, except the spinner line."""

    def __init__(self, console: Console, status: SessionStatus) -> None:
        self.console = console
        self.status = status
        self.show_reasoning = False
        self._md = MarkdownStream(self._print_block)
        self._spinner: Any = None
        self._task: Any = None
        self._reasoning_chars = 0
        self._tool_names: dict[str, str] = {}

    # --- spinner --------------------------------------------------------------------------------------

    def spin(self, label: str) -> None:
        """A spinner with the elapsed time while the model or a tool works; transient, so nothing is left."""
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.stop_spinner()
        self._spinner = Progress(SpinnerColumn("dots"), TextColumn("{task.description}", style="dim", markup=False),
                                 TimeElapsedColumn(), console=self.console, transient=True)  # fmt: skip
        self._task = self._spinner.add_task(label)
        self._spinner.start()

    def spin_label(self, label: str) -> None:
        if self._spinner is not None:
            self._spinner.update(self._task, description=label)

    def stop_spinner(self) -> None:
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None

    # --- events ---------------------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:
            handler(event)

    def _on_step_begin(self, event: StepBegin) -> None:
        self._reasoning_chars = 0
        self.spin("thinking")

    def _on_reasoning_delta(self, event: ReasoningDelta) -> None:
        self._reasoning_chars += len(event.text)
        if self.show_reasoning:
            self.stop_spinner()
            self.console.print(visible_text(event.text, "dim italic"), end="")
        else:
            self.spin_label(f"thinking ({self._reasoning_chars:,} chars of reasoning; /reasoning shows it)")

    def _on_text_delta(self, event: TextDelta) -> None:
        self.stop_spinner()
        self._md.feed(event.text)

    def _print_block(self, block: str) -> None:
        # Escapes written out before Markdown sees them; links shown with their address, not hidden behind text.
        self.console.print(Markdown(visible(block), hyperlinks=False))

    def _on_tool_call(self, event: ToolCall) -> None:
        self._md.close()
        self._tool_names[event.id] = event.name
        name = visible(event.name, one_line=True)
        summary = visible(_args_summary(event.name, event.arguments), one_line=True)
        self.console.print(Text.assemble(("⏺ ", "cyan"), (name, "bold cyan"), (" " + summary, "")))
        self.spin(f"running {name}")

    def _on_tool_result(self, event: ToolOutput) -> None:
        self.stop_spinner()
        display = event.display or {}
        kind = display.get("kind")
        if kind == "diff" and display.get("diff"):
            body = Syntax(visible(display["diff"]), "diff", theme="ansi_dark", word_wrap=True)
            title = visible_text(str(display.get("path", "")), one_line=True)
            self.console.print(Panel(body, title=title, border_style="green", expand=False))
        elif kind == "todos":
            lines = [f"{TODO_MARKS.get(t['status'], '☐')} {t['title']}" for t in display.get("todos", [])]
            plan = visible_text("\n".join(lines) or "(empty)")
            self.console.print(Panel(plan, title="plan", border_style="blue", expand=False))
        elif kind == "fetch":
            info = f"HTTP {display.get('status')} · {display.get('type')} · {display.get('size', 0):,} bytes"
            url = visible_text(str(display.get("url", "")), one_line=True)
            self.console.print(Panel(visible_text(info, "dim"), title=url, border_style="blue", expand=False))
        elif kind == "shell":
            code = "timed out" if display.get("timed_out") else f"exit {display.get('exit_code')}"
            tail = "\n".join(event.output.splitlines()[1:][-8:])
            style = "red" if event.is_error else "green"
            self.console.print(
                Panel(
                    visible_text(tail or "(no output)", "dim", drop_colors=True),
                    title=visible_text(f"$ {display.get('command', '')}", exact_bytes=True, one_line=True),
                    subtitle=code,
                    border_style=style,
                    expand=False,
                )
            )
        else:
            first = event.output.splitlines()[0] if event.output else "(no output)"
            style = "red" if event.is_error else "dim"
            self.console.print(visible_text(f"  ⎿ {first[:200]}", style, drop_colors=True))

    def _on_usage(self, event: UsageUpdate) -> None:
        self.status.add(event.usage)

    def _on_step_end(self, event: StepEnd) -> None:
        self.stop_spinner()
        self._md.close()

    def _on_retry(self, event: RetryNotice) -> None:
        self.console.print(visible_text(f"↻ retry {event.attempt} in {event.wait_s:.1f}s: {event.error}", "yellow"))

    def _on_error(self, event: ErrorNotice) -> None:
        self.stop_spinner()
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
        self.stop_spinner()
        self._md.close()


def _args_summary(name: str, arguments: str) -> str:
    import json

    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return arguments[:100]
    if not isinstance(args, dict):
        return ""
    for key in ("command", "path", "pattern"):
        if key in args:
            return str(args[key])[:160]
    return ", ".join(f"{k}={str(v)[:40]}" for k, v in args.items())[:160]
