"""The SDK's events: stream-json's lines (kimi_cli/frontends/headless/headless.schema.json) as pydantic models.

One model per `type`; `parse_event` turns one stream-json object into its model. A test
(tests/unit/test_sdk_events.py) holds these models and the schema file in step: the same types, the same
required fields. Fields a later kimi adds come through as extra attributes (extra="allow"), so an additive
change is no break; removing or retyping a field is, and bumps EVENT_SCHEMA_VERSION (docs/sdk.md).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

# The version of the event schema these models follow; the schema file says the same ("x-kimi-schema-version").
EVENT_SCHEMA_VERSION = 1


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class Init(_Event):
    type: Literal["init"] = "init"
    session_id: str
    resumed: bool
    model: str
    provider: str
    context_window: int
    cwd: str
    sandbox: str
    tools: list[str]
    pack: dict[str, Any] | None
    version: str
    effort: str | None = None


class StepBegin(_Event):
    type: Literal["step_begin"] = "step_begin"
    step: int


class TextDelta(_Event):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ReasoningDelta(_Event):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str


class Retry(_Event):
    type: Literal["retry"] = "retry"
    attempt: int
    wait_s: float
    error: str


class ToolCall(_Event):
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: str


class ToolResult(_Event):
    type: Literal["tool_result"] = "tool_result"
    id: str
    name: str
    output: str
    is_error: bool
    duration_ms: float
    display: dict[str, Any] | None = None


class Usage(_Event):
    type: Literal["usage"] = "usage"
    step: int
    usage: dict[str, int]
    total: dict[str, int]


class StepEnd(_Event):
    type: Literal["step_end"] = "step_end"
    step: int
    model_ms: float
    tools_ms: float


class Compacted(_Event):
    type: Literal["compacted"] = "compacted"
    tokens_before: int = 0
    messages_before: int = 0
    messages_after: int = 0


class Error(_Event):
    type: Literal["error"] = "error"
    message: str


class Notice(_Event):
    type: Literal["notice"] = "notice"
    message: str


class Result(_Event):
    """How the run ended: always the last event. `cost` is {"total_usd": ..., "priced": ...} (headless.md)."""

    type: Literal["result"] = "result"
    reason: str
    is_error: bool
    exit_code: int
    error: dict[str, Any] | None
    message: str
    session_id: str | None
    text: str
    steps: int
    usage: dict[str, int]
    cost: dict[str, Any] | None
    timing: dict[str, Any]
    model: str | None
    provider: str | None
    effort: str | None
    tokens: dict[str, int] | None = None
    structured_output: Any = None

    @property
    def cost_usd(self) -> float | None:
        """The run's price in US dollars; None where nothing priced it (the model table has no rates)."""
        if not self.cost or not self.cost.get("priced"):
            return None
        return float(self.cost.get("total_usd", 0.0))


Event = Annotated[
    Init
    | StepBegin
    | TextDelta
    | ReasoningDelta
    | Retry
    | ToolCall
    | ToolResult
    | Usage
    | StepEnd
    | Compacted
    | Error
    | Notice
    | Result,
    Field(discriminator="type"),
]
EVENT_MODELS: tuple[type[_Event], ...] = (Init, StepBegin, TextDelta, ReasoningDelta, Retry, ToolCall, ToolResult,
                                           Usage, StepEnd, Compacted, Error, Notice, Result)  # fmt: skip
_ADAPTER: TypeAdapter[Any] = TypeAdapter(Event)


def parse_event(obj: dict[str, Any]) -> Event:
    """One stream-json object as its model (pydantic.ValidationError when it matches none)."""
    return _ADAPTER.validate_python(obj)  # type: ignore[no-any-return]
