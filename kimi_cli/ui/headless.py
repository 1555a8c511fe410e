"""Headless renderers: final text on stdout with progress on stderr, one JSON object, or JSON lines."""

from __future__ import annotations

import sys
from typing import Any, Literal, TextIO

from kimi_cli.agent.events import (
    ErrorNotice,
    Event,
    Finished,
    Notice,
    RetryNotice,
    StepBegin,
    ToolCall,
    ToolOutput,
)
from kimi_cli.jsonsafe import dumps
from kimi_cli.ui.sanitize import visible

OutputFormat = Literal["text", "json", "stream-json"]


def _one_line(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _clean(text: str) -> str:
    """Untrusted text for stdout or stderr in text mode: escapes and controls made visible."""
    return visible(text, drop_colors=True)


class HeadlessRenderer:
    """Turns events into output for scripts and CI."""

    def __init__(self, fmt: OutputFormat, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.fmt = fmt
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.extra: dict[str, Any] = {}

    def __call__(self, event: Event) -> None:
        if isinstance(event, Finished) and event.message:
            self.err.write(f"kimi: {event.reason}: {_clean(event.message)}\n")
        if self.fmt == "stream-json":
            self.out.write(dumps(event.to_dict()) + "\n")  # data: exact, and inert on a terminal
            self.out.flush()
            return
        if isinstance(event, Finished):
            self._finish(event)
        elif self.fmt == "text":
            self._progress(event)

    def _progress(self, event: Event) -> None:
        line = None
        if isinstance(event, StepBegin):
            line = f"[step {event.step}]"
        elif isinstance(event, ToolCall):
            line = f"  → {event.name} {_one_line(event.arguments, 100)}"
        elif isinstance(event, ToolOutput) and event.is_error:
            line = f"  ✗ {_one_line(event.output)}"
        elif isinstance(event, RetryNotice):
            line = f"  ↻ retry {event.attempt} in {event.wait_s:.1f}s: {event.error}"
        elif isinstance(event, ErrorNotice):
            line = f"error: {event.message}"
        elif isinstance(event, Notice):
            line = f"note: {event.message}"
        if line:
            self.err.write(_clean(line) + "\n")
            self.err.flush()

    def _finish(self, event: Finished) -> None:
        if self.fmt == "json":
            body = {k: v for k, v in event.to_dict().items() if k != "type"}
            self.out.write(dumps({"type": "result", **body, **self.extra}) + "\n")
        else:
            if event.text:
                self.out.write(visible(event.text).rstrip("\n") + "\n")
        self.out.flush()
        self.err.flush()
