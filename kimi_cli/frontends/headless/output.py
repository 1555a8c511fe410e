"""Headless renderers: final text on stdout with progress on stderr, one JSON object, or JSON lines.

The contract (docs/headless.md, schema in kimi_cli/frontends/headless/headless.schema.json):
- `text` prints the final answer on stdout; with `--output-schema`, exactly the validated JSON value (one
  line), and nothing when the answer did not validate.
- `json` prints exactly one JSON object on stdout, whatever happens: the `result` (errors included).
- `stream-json` prints one event per line: `init` first (once the session exists), the loop's events,
  and the same `result` object as `json` last. An error before the session exists is a lone `result`.
- Retries are told on stderr in every format, one line each, so a wrong port is never silence.
"""

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
from kimi_cli.util.jsonsafe import dumps
from kimi_cli.util.sanitize import visible

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
        self.finished: Finished | None = None
        self.printed_result = False
        # stream-json: what the session says before `init` (its start notices) waits for it, so init is first
        self._before_init: list[dict[str, Any]] | None = [] if fmt == "stream-json" else None

    def __call__(self, event: Event) -> None:
        if isinstance(event, Finished):
            self.finished = event  # the result object is written by result(), with cost and timing
            if event.message:
                self.err.write(f"kimi: {event.reason}: {_clean(event.message)}\n")
            return
        if isinstance(event, RetryNotice):  # every format: a retry is never silent
            self._stderr(f"kimi: retry {event.attempt} in {event.wait_s:.1f} s: {event.error}")
        elif isinstance(event, Notice) and self.fmt == "json":  # json's stdout is the result alone: notes on stderr
            self._stderr(f"kimi: note: {event.message}")
        if self.fmt == "stream-json":
            if self._before_init is not None:
                self._before_init.append(event.to_dict())
            else:
                self._line(event.to_dict())
        elif self.fmt == "text":
            self._progress(event)

    def init(self, info: dict[str, Any]) -> None:
        """stream-json's first line: the session, model, tools and pack, before any step."""
        if self.fmt == "stream-json":
            self._line({"type": "init", **info})
            for held in self._before_init or []:
                self._line(held)
            self._before_init = None

    def result(self, result: dict[str, Any]) -> None:
        """The run's end: one JSON object (json, stream-json), or the answer's text (text)."""
        if self.printed_result:
            return
        self.printed_result = True
        if self.fmt in ("json", "stream-json"):
            self._line(result)
        elif "structured_output" in result:  # --output-schema: the validated value alone, or nothing
            if not result.get("is_error"):  # (null is a value a schema may allow)
                self.out.write(dumps(result["structured_output"]) + "\n")
        elif result.get("text"):
            self.out.write(visible(str(result["text"])).rstrip("\n") + "\n")
        self.out.flush()
        self.err.flush()

    def _line(self, obj: dict[str, Any]) -> None:
        self.out.write(dumps(obj) + "\n")  # data: exact, and inert on a terminal
        self.out.flush()

    def _stderr(self, line: str) -> None:
        self.err.write(_clean(line) + "\n")
        self.err.flush()

    def _progress(self, event: Event) -> None:
        line = None
        if isinstance(event, StepBegin):
            line = f"[step {event.step}]"
        elif isinstance(event, ToolCall):
            line = f"  → {event.name} {_one_line(event.arguments, 100)}"
        elif isinstance(event, ToolOutput) and event.is_error:
            line = f"  ✗ {_one_line(event.output)}"
        elif isinstance(event, ErrorNotice):
            line = f"error: {event.message}"
        elif isinstance(event, Notice):
            line = f"note: {event.message}"
        if line:
            self._stderr(line)
