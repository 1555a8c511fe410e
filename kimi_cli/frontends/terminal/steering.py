"""Steer a running turn: Ctrl-S sends what was typed ahead into the turn now, not after it.

A message typed while a turn runs is queued and sent when the turn ends (input.py). Ctrl-S takes the queue
(and whatever is on the input line) and hands it to the running turn: the loop adds it as a user message
at its next step boundary, before the next request (Agent.between_steps, the loop's seam for what a front
end adds), so the model reads it while it still works on the task. A turn that ends before another
request (the model answered without calling a tool) leaves the message unsent: it goes back to the queue
and is sent as the next prompt, as a queued message would be. Commands (`/...`) are never steered.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from kimi_cli.llm.types import Message
from kimi_cli.util.sanitize import visible_text


class Steering:
    """The messages waiting for the running turn's next step (`app` is the InteractiveApp)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.pending: list[str] = []

    def attach(self, agent: Any) -> None:
        """Give the agent the hook (once: a new agent comes with /clear, /resume, /fork)."""
        if self.between not in agent.between_steps:
            agent.between_steps.append(self.between)

    async def between(self) -> list[Message]:
        """Called by the loop before each request: the steered messages, as one user message."""
        if not self.pending:
            return []
        texts, self.pending = self.pending, []
        self.app.console.print(Text("  ↳ steering message sent to kimi", style="dim"))
        return [{"role": "user", "content": "\n\n".join(texts)}]

    def steer(self) -> bool:
        """Ctrl-S: the queued messages and the input line's text go into the running turn."""
        app = self.app
        if app.current is None or app.input.question is not None:
            return False
        buffer = app.input.session.default_buffer
        typed = buffer.text
        texts = [t for t in [*app.input.queued, typed] if t.strip()]
        commands = [t for t in texts if t.strip().startswith("/")]
        texts = [t for t in texts if t not in commands]
        if not texts:
            app.console.print(Text("  nothing to steer with: type a message, then Ctrl-S", style="dim"))
            return False
        app.input.queued[:] = commands
        if typed.strip():
            buffer.append_to_history()
            buffer.reset()
        self.pending.extend(texts)
        for text in texts:
            app.console.print(Text("❯ ", style="bold").append_text(visible_text(text.strip("\n"), "bold")))
        app.console.print(Text("  (steering: sent into the running turn at its next step)", style="dim"))
        app.input.invalidate()
        return True

    def leftover(self) -> list[str]:
        """What the turn ended without reading: sent as the next prompt."""
        left, self.pending = self.pending, []
        return left

    def bind_keys(self, bindings: Any) -> None:
        from prompt_toolkit.filters import Condition

        app = self.app

        @bindings.add("c-s", filter=Condition(lambda: app.current is not None and app.input.question is None))
        def _steer(event: Any) -> None:
            self.steer()
