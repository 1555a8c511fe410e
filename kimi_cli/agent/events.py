"""Typed events from the agent loop. Renderers and the session log consume them; the loop renders nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


@dataclass
class Event:
    type: ClassVar[str] = "event"
    logged: ClassVar[bool] = True  # whether the session log keeps it (deltas live on in the message)
    shown: ClassVar[bool] = True  # whether front ends get it; observers (Agent.observers) get every event

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


@dataclass
class StepBegin(Event):
    type: ClassVar[str] = "step_begin"
    step: int


@dataclass
class TextDelta(Event):
    type: ClassVar[str] = "text_delta"
    logged: ClassVar[bool] = False
    text: str


@dataclass
class ReasoningDelta(Event):
    type: ClassVar[str] = "reasoning_delta"
    logged: ClassVar[bool] = False
    text: str


@dataclass
class RetryNotice(Event):
    type: ClassVar[str] = "retry"
    attempt: int
    wait_s: float
    error: str


@dataclass
class ToolCall(Event):
    type: ClassVar[str] = "tool_call"
    id: str
    name: str
    arguments: str


@dataclass
class ToolOutput(Event):
    type: ClassVar[str] = "tool_result"
    id: str
    name: str
    output: str
    is_error: bool
    duration_ms: float
    display: dict[str, Any] | None = None


@dataclass
class UsageUpdate(Event):
    type: ClassVar[str] = "usage"
    step: int
    usage: dict[str, int]
    total: dict[str, int]


@dataclass
class StepEnd(Event):
    type: ClassVar[str] = "step_end"
    step: int
    model_ms: float
    tools_ms: float


@dataclass
class Compacted(Event):
    type: ClassVar[str] = "compacted"
    tokens_before: int
    messages_before: int
    messages_after: int


@dataclass
class ErrorNotice(Event):
    type: ClassVar[str] = "error"
    message: str


@dataclass
class Notice(Event):
    """Something the user should know once, that is not an error (no usage from the server, a server down)."""

    type: ClassVar[str] = "notice"
    message: str


@dataclass
class Finished(Event):
    type: ClassVar[str] = "finished"
    reason: str
    exit_code: int
    text: str
    steps: int
    usage: dict[str, int] = field(default_factory=dict)
    session_id: str = ""
    message: str = ""


@dataclass
class TurnBegin(Event):
    """A prompt starts a run of the loop. Observers only: the log's `turn` record and message hold the prompt."""

    type: ClassVar[str] = "turn_begin"
    logged: ClassVar[bool] = False
    shown: ClassVar[bool] = False
    prompt: str


@dataclass
class TurnEnd(Event):
    """The run of the loop for one prompt ended: done, a budget, cancelled, an error (with its message)."""

    type: ClassVar[str] = "turn_end"
    shown: ClassVar[bool] = False
    reason: str
    exit_code: int
    steps: int
    message: str = ""


@dataclass
class ApprovalDecided(Event):
    """What the approver decided for a call that needed deciding (kimi_cli.agent.approvals): `outcome` is
    allowed or refused; `answer` is the user's when asked (yes, always, save, no), else empty."""

    type: ClassVar[str] = "approval"
    shown: ClassVar[bool] = False  # front ends show their own questions
    call_id: str
    kind: str  # shell | web | mcp | hook
    subject: str  # the command, the URL or the tool and its arguments
    outcome: str
    answer: str = ""
    reason: str = ""


Observer = Callable[[Event], None]


def notify(observers: list[Observer], event: Event) -> None:
    """Give `event` to each observer. One that raises is dropped (and logged) rather than let it end the
    session: an exporter's bug must not cost the user their work."""
    for observer in list(observers):
        try:
            observer(event)
        except Exception:
            observers.remove(observer)
            import logging

            logging.getLogger("kimi.events").exception("an event observer failed and was dropped")
