"""`/btw QUESTION`: a side question about the session that never enters its history.

It is one request with the conversation so far, the question after it and no tools; the answer is printed
and dropped: neither the question nor the answer is recorded, so the main conversation (and what the
model reads next) is as if it was never asked. Its tokens count in the session's cost. Typed while a turn
runs, it is answered at once, beside the turn (a command would otherwise wait in the queue).
"""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text

from kimi_cli.llm.types import Message
from kimi_cli.util.sanitize import visible, visible_text

SIDE_NOTE = ("[side question from the user: answer it briefly from this conversation; it is not part of the task, "
             "do not continue the task, no tools] ")  # fmt: skip
MAX_ANSWER_TOKENS = 2048


def settled(messages: list[Message]) -> list[Message]:
    """The history up to its last point where every tool call has its result (a running turn's last step may
    not): a request must not end in unanswered calls."""
    out: list[Message] = []
    pending: set[str] = set()
    cut = 0
    for message in messages:
        out.append(message)
        for call in message.get("tool_calls") or []:
            pending.add(str(call.get("id", "")))
        if message.get("role") == "tool":
            pending.discard(str(message.get("tool_call_id", "")))
        if not pending:
            cut = len(out)
    return list(out[:cut])


class SideQuestions:
    """Registered once per interactive session (`app` is the InteractiveApp)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._tasks: set[asyncio.Future[Any]] = set()

    def register(self, registry: Any) -> None:
        from kimi_cli.frontends.terminal.slash_registry import SlashCommand

        registry.add(SlashCommand("btw", "a side question; not kept in the conversation (works mid-turn)",
                                  self.cmd_btw, "/btw QUESTION"))  # fmt: skip

    def takes(self, text: str) -> bool:
        """While a turn runs: `/btw ...` is answered now, beside it (True), instead of queued."""
        stripped = text.strip()
        if not (stripped.startswith("/btw ") and stripped[5:].strip()):
            return False
        self.app.echo(stripped)
        task = asyncio.ensure_future(self.cmd_btw(stripped[5:].strip()))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def cmd_btw(self, arg: str) -> None:
        if not arg:
            self.app.console.print(Text("usage: /btw QUESTION (answered from the conversation, then forgotten)"))
            return
        app = self.app
        messages = [*settled(app.agent.messages), {"role": "user", "content": SIDE_NOTE + arg}]
        try:
            completion = await app.provider.complete(messages, [], None, MAX_ANSWER_TOKENS)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            redact = getattr(app.provider, "redact", str)
            app.console.print(visible_text(f"/btw failed: {redact(str(exc))}", "yellow"))
            return
        if completion.usage is not None:
            app.status.add(completion.usage.as_dict())
        from kimi_cli.frontends.terminal.render import AnswerMarkdown

        app.console.print(Text("btw ›", style="bold cyan"))
        app.console.print(AnswerMarkdown(visible(completion.text or "(no answer)"), hyperlinks=False))
        app.console.print(Text("  (side answer: not kept in the conversation)", style="dim"))
