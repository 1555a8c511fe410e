"""Stand-ins at the seams the loop was built with: a scripted provider, a recorder in memory, a checkpointer
that writes down what it was asked, and small tools whose progress the test controls. Nothing of kimi's own
is replaced: the Agent, the registry, the call runner and the real tools run as they do in a session."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kimi_cli.agent.loop import Agent
from kimi_cli.agent.prefix import PrefixBuilder
from kimi_cli.context.session_context import SessionContext
from kimi_cli.llm.assemble import StreamCallbacks
from kimi_cli.llm.types import Completion, Message, ToolCallRequest, Usage
from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.workspace import Workspace

Answer = Completion | BaseException | Callable[[list[Message]], Awaitable[Completion]]


def text(content: str, prompt: int = 10, completion: int = 5, reasoning: str = "") -> Completion:
    return Completion(text=content, reasoning=reasoning, finish_reason="stop", usage=Usage(prompt, completion))


def calls(*items: tuple[str, str | dict[str, Any]], prompt: int = 10, completion: int = 5) -> Completion:
    """An answer that calls tools: (name, arguments as a dict or raw text), ids c0, c1, ..."""
    import json

    requests = [
        ToolCallRequest(f"c{i}", name, args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(items)
    ]
    return Completion(tool_calls=requests, finish_reason="tool_calls", usage=Usage(prompt, completion))


@dataclass
class Request:
    messages: list[Message]
    tools: list[str]
    max_tokens: int | None


class FakeProvider:
    """Answers each request with the next scripted answer (a Completion, an exception to raise, or an async
    function of the messages). Records what it was sent."""

    def __init__(self, *answers: Answer) -> None:
        self.answers: list[Answer] = list(answers)
        self.requests: list[Request] = []

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        callbacks: StreamCallbacks | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        names = [t["function"]["name"] for t in tools]
        self.requests.append(Request(copy.deepcopy(messages), names, max_tokens))
        if not self.answers:
            raise AssertionError("the provider was asked more often than the script says")
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            answer = await answer(messages)
        if callbacks is not None:
            if answer.reasoning:
                callbacks.on_reasoning(answer.reasoning)
            if answer.text:
                callbacks.on_text(answer.text)
        return copy.deepcopy(answer)


@dataclass
class MemoryRecorder:
    messages: list[Message] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    steps_ended: list[int] = field(default_factory=list)

    def append_message(self, message: Message) -> None:
        self.messages.append(message)

    def replace_history(self, messages: list[Message], reason: str) -> None:
        self.replaced.append(reason)

    def append_event(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def end_step(self, steps: int) -> None:
        self.steps_ended.append(steps)


@dataclass
class RecordingCheckpointer:
    turns: list[tuple[int, str]] = field(default_factory=list)
    snapshots: list[tuple[str, int, int, list[str]]] = field(default_factory=list)

    def mark_turn(self, message_index: int, prompt: str) -> None:
        self.turns.append((message_index, prompt))

    async def snapshot(self, phase: str, step: int, message_index: int, tools: list[str]) -> str | None:
        self.snapshots.append((phase, step, message_index, tools))
        return None


class KeyParams(BaseModel):
    key: str = Field("k", description="A label.")


class Rendezvous(Tool[KeyParams]):
    """A read that returns only once `expected` calls have started: calls run one after another never get
    there, and the test fails on the timeout instead of passing on a lucky schedule."""

    name = "Rendezvous"
    description = "test tool"
    Params = KeyParams
    facts = READS

    def __init__(self, expected: int, timeout: float = 5.0) -> None:
        self.expected = expected
        self.timeout = timeout
        self.started: list[str] = []
        self._all_in = asyncio.Event()

    async def run(self, params: KeyParams, ctx: ToolContext) -> ToolResult:
        self.started.append(params.key)
        if len(self.started) >= self.expected:
            self._all_in.set()
        await asyncio.wait_for(self._all_in.wait(), self.timeout)
        return ToolResult(f"met {params.key}")


class Journal(Tool[KeyParams]):
    """Writes down when each call starts and ends; `writes` decides whether it is a barrier."""

    description = "test tool"
    Params = KeyParams

    def __init__(self, name: str, log: list[str], facts: ToolFacts = READS, output: str | None = None) -> None:
        self.name = name  # type: ignore[misc]
        self.log = log
        self._facts = facts
        self.output = output

    def declared(self) -> ToolFacts:
        return self._facts

    async def run(self, params: KeyParams, ctx: ToolContext) -> ToolResult:
        self.log.append(f"start {self.name} {params.key}")
        await asyncio.sleep(0)  # let anything that could run beside it start
        self.log.append(f"end {self.name} {params.key}")
        return ToolResult(self.output if self.output is not None else f"{self.name} {params.key}")


def agent_for(
    provider: FakeProvider,
    tools: list[Tool[Any]],
    root: Path,
    recorder: MemoryRecorder | None = None,
    emitted: list[Any] | None = None,
    **kwargs: Any,
) -> Agent:
    """An Agent over real tools in `root`, a system message and the given provider."""
    sink = emitted if emitted is not None else []
    return Agent(
        provider=provider,
        registry=ToolRegistry(tools),
        ctx=ToolContext(workspace=Workspace(root)),
        recorder=recorder or MemoryRecorder(),
        emit=sink.append,
        messages=kwargs.pop("messages", [{"role": "system", "content": "you are a test"}]),
        max_steps=kwargs.pop("max_steps", 20),
        **kwargs,
    )


def context_for(root: Path, pack: bool = True, **kwargs: Any) -> SessionContext:
    """The real SessionContext over `root`, with the real prefix builder."""
    options = {"budget": 20_000, "context_length": 100_000, "compact_at": 0.8, **kwargs}
    return SessionContext(root, PrefixBuilder(root).message, pack_repo=pack, **options)


def user(content: str) -> Message:
    return {"role": "user", "content": content}
