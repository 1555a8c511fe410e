"""Approvals on the record: each question an approver asks and each refusal becomes an ApprovalDecided event,
so the session log, an export and telemetry know what was asked and what the user answered. A call that
ran without a question (a sandboxed command under `auto`) records nothing.

The wrapper sits outside every other approver wrapper (kimi_cli.extensions.hooks.approvals). A question is
recorded by wrapping the innermost approver's `ask` callback (the terminal's and ACP's InteractiveApprover),
so the answer is the user's own word as the front end returned it; a headless approver asks nobody.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any

from kimi_cli.agent.calls import RUNNING_CALL
from kimi_cli.agent.events import ApprovalDecided, Event

SUBJECT_CHARS = 2000  # a command or arguments this long says enough; the log keeps the whole call anyway
# The answer of the question asked during the review running in this task (None: no review running).
_ANSWER: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("approval_answer", default=None)


class RecordedApprover:
    """Delegates to `inner`; tells `emit` every decision. `emit` may be set after construction (the agent
    that logs the events is made after its tools)."""

    def __init__(self, inner: Any, emit: Callable[[Event], None] | None = None) -> None:
        self.inner = inner
        self.emit = emit
        owner = _ask_owner(inner)
        if owner is not None and owner.ask is not None:  # a later agent wraps the front end's own callback again
            owner.ask = self._asking(getattr(owner.ask, "__wrapped__", owner.ask))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def review_shell(self, command: str, sandbox: str, call: Any = None) -> str | None:
        return await self._review("shell", command, self.inner.review_shell(command, sandbox, call))

    async def review_web(self, host: str, url: str, call: Any = None) -> str | None:
        return await self._review("web", url, self.inner.review_web(host, url, call))

    async def review_mcp(self, tool_name: str, arguments: str, call: Any = None) -> str | None:
        review = self.inner.review_mcp(tool_name, arguments, call)
        return await self._review("mcp", f"{tool_name} {arguments}", review)

    async def _review(self, kind: str, subject: str, review: Awaitable[str | None]) -> str | None:
        answer: list[str] = []
        token = _ANSWER.set(answer)
        try:
            refusal = await review
        finally:
            _ANSWER.reset(token)
        if refusal or answer:  # what ran without a question (a sandboxed command under auto) is no decision
            self._tell(kind, subject, "refused" if refusal else "allowed", answer[0] if answer else "", refusal or "")
        return refusal

    def _asking(self, ask: Callable[[str, str], Awaitable[str]]) -> Callable[[str, str], Awaitable[str]]:
        async def recorded(question: str, rule: str) -> str:
            answer = await ask(question, rule)
            slot = _ANSWER.get()
            if slot is not None:
                slot.append(answer)
            else:  # asked outside a review: a PreToolUse hook's "ask" (kimi_cli.agent.gate)
                outcome = "allowed" if answer in ("yes", "always", "save") else "refused"
                self._tell("hook", question, outcome, answer, "")
            return answer

        recorded.__wrapped__ = ask  # type: ignore[attr-defined]
        return recorded

    def _tell(self, kind: str, subject: str, outcome: str, answer: str, reason: str) -> None:
        if self.emit is None:
            return
        word, _, why = answer.partition(":")
        self.emit(ApprovalDecided(RUNNING_CALL.get(), kind, subject[:SUBJECT_CHARS], outcome, word, reason or why))


def _ask_owner(approver: Any) -> Any:
    """The innermost approver with its own `ask` attribute (wrappers forward `ask` through __getattr__)."""
    seen = 0
    while approver is not None and seen < 8:
        if "ask" in getattr(approver, "__dict__", {}):
            return approver
        approver = getattr(approver, "__dict__", {}).get("inner")
        seen += 1
    return None
