"""Typed events from the agent loop. Renderers and the session log consume them; the loop renders nothing."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


@dataclass
class Event:
    type: ClassVar[str] = "event"
    logged: ClassVar[bool] = True  # whether the session log keeps it (deltas live on in the message)

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
