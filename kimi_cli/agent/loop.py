"""The agent loop: send the conversation, stream the answer, run the tool calls, repeat.

The loop knows tools only through the registry: each call is prepared once (parsed, validated, its facts
read), and checkpoints, change notes, batching and compaction ask those facts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kimi_cli.agent.calls import CallObserver, CallOutcome, CallRunner
from kimi_cli.agent.events import (
    Compacted,
    Event,
    Notice,
    Observer,
    ReasoningDelta,
    RetryNotice,
    StepBegin,
    StepEnd,
    TextDelta,
    ToolOutput,
    TurnBegin,
    TurnEnd,
    UsageUpdate,
    notify,
)
from kimi_cli.agent.gate import SessionGate
from kimi_cli.agent.guard import LoopGuard
from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.llm.assemble import StreamCallbacks
from kimi_cli.llm.failures import ContextOverflow
from kimi_cli.llm.types import Completion, Message, Usage
from kimi_cli.session.history import INTERRUPTED
from kimi_cli.tools.base import ToolContext, ToolFacts
from kimi_cli.tools.output import cap_text
from kimi_cli.tools.registry import PreparedCall, ToolRegistry
from kimi_cli.util.redact import redact

TOOL_OUTPUT_CAP = 100_000
IMAGES_NOTE = "Images returned by the tool calls above:"


class Provider(Protocol):
    async def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        callbacks: StreamCallbacks | None = None,
        max_tokens: int | None = None,
    ) -> Completion: ...


class Checkpointer(Protocol):
    """Snapshots the workspace around steps that change files, so they can be undone."""

    def mark_turn(self, message_index: int, prompt: str) -> None: ...
    async def snapshot(self, phase: str, step: int, message_index: int, tools: list[str]) -> str | None: ...


class ContextHooks(Protocol):
    """The repository context: notes after tools (what changed; instructions of folders first visited), and
    compaction near the window's end."""

    def after_tools(self, own_paths: list[str], unknown_changes: bool, visited: list[str]) -> str: ...
    def observe_usage(self, messages: list[Message], tools: list[dict[str, Any]], prompt_tokens: int) -> None: ...

    context_length: int

    def estimate(self, messages: list[Message], prompt_tokens: int, sent_count: int) -> int: ...
    def should_compact(self, messages: list[Message], prompt_tokens: int, sent_count: int) -> bool: ...
    def bind(self, provider: Any, tell: Callable[[str], None], tools: Callable[[], list[dict[str, Any]]]) -> None: ...
    async def compact(
        self, provider: Any, messages: list[Message], todos: list[dict[str, str]], touched: list[str]
    ) -> list[Message]: ...


class Recorder(Protocol):
    """Where the loop persists what happened (the session)."""

    def append_message(self, message: Message) -> None: ...
    def replace_history(self, messages: list[Message], reason: str) -> None: ...
    def append_event(self, event: dict[str, Any]) -> None: ...
    def end_step(self, steps: int) -> None: ...


@dataclass
class RunOutcome:
    reason: str  # done | max_steps | token_budget | loop_detected
    exit_code: ExitCode
    text: str
    steps: int
    message: str = ""


class Agent:
    """Runs one task over a message history. Emits events; knows nothing about rendering."""

    def __init__(
        self,
        provider: Provider,
        registry: ToolRegistry,
        ctx: ToolContext,
        recorder: Recorder,
        emit: Callable[[Event], None],
        messages: list[Message],
        max_steps: int | None,
        max_tokens: int | None = None,
        checkpointer: Checkpointer | None = None,
        context: ContextHooks | None = None,
        max_output_tokens: int | None = None,
        notes: Callable[[], list[str]] | None = None,
        user_prompts: bool = True,
        gate: SessionGate | None = None,
    ) -> None:
        self.provider = provider
        self.registry = registry
        self.ctx = ctx
        self.recorder = recorder
        self._emit_ui = emit
        self.messages = messages
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.checkpointer = checkpointer
        self.context = context
        self.max_output_tokens = max_output_tokens
        self.notes = notes  # things that happened on their own (a background task ended): told before a request
        # Before each request: what a front end adds (the visual check's screenshot of the page just edited,
        # kimi_cli.frontends.headless.visual); each returns the messages to add, often none.
        self.between_steps: list[Callable[[], Awaitable[list[Message]]]] = []
        self.user_prompts = user_prompts  # False for a subagent: its task is the model's words, not the user's
        self.gate = gate  # plan mode and hooks (kimi_cli.agent.gate): called at one point per event
        self._usage_missing_told = False
        self._prompt_tokens = 0  # what the last request cost (prompt + completion), from the server
        self._sent_count = 0  # how many messages that figure covers
        self.guard = LoopGuard()
        # The facts of every call prepared in this agent, by (id, name, arguments): compaction reads them
        # instead of preparing the whole history's calls again (only a resumed session's older calls are).
        self._facts_of: dict[tuple[str, str, str], ToolFacts] = {}
        self.usage = Usage()
        self.steps = 0
        self.tools_seconds = 0.0
        self.observers: list[Observer] = []  # every event, the unshown too (kimi_cli.telemetry)
        self.call_observer: CallObserver | None = None  # sees each call that ran (the language servers)
        if context is not None:  # the window it keeps requests in: the provider's, its notices, the tools block
            context.bind(provider, lambda message: self.emit(Notice(message)), registry.schemas)

    def emit(self, event: Event) -> None:
        if event.logged:
            self.recorder.append_event(event.to_dict())
        if self.observers:
            notify(self.observers, event)
        if event.shown:
            self._emit_ui(event)

    def add_message(self, message: Message) -> None:
        self.messages.append(message)
        self.recorder.append_message(message)

    async def run(self, user_message: Message, preamble: list[Message] | None = None) -> RunOutcome:
        """One prompt's run, between a TurnBegin and a TurnEnd that says how it ended, whatever ends it."""
        self.emit(TurnBegin(_prompt_text(user_message, limit=None)))
        first = self.steps
        end = TurnEnd("error", int(ExitCode.ERROR), 0)
        try:
            outcome = await self._run(user_message, preamble)
            end = TurnEnd(outcome.reason, int(outcome.exit_code), 0, outcome.message)
            return outcome
        except asyncio.CancelledError:
            end = TurnEnd("cancelled", int(ExitCode.CANCELLED), 0, "cancelled")
            raise
        except KimiError as exc:
            reason = "provider_unavailable" if exc.exit_code == ExitCode.PROVIDER_UNAVAILABLE else "error"
            end = TurnEnd(reason, int(exc.exit_code), 0, redact(str(exc)))
            raise
        except Exception as exc:
            end = TurnEnd("error", int(ExitCode.ERROR), 0, redact(f"{type(exc).__name__}: {exc}"))
            raise
        finally:
            end.steps = self.steps - first
            self.emit(end)

    async def _run(self, user_message: Message, preamble: list[Message] | None) -> RunOutcome:
        verdict = await self.gate.prompt(_prompt_text(user_message, limit=None)) if self.gate is not None else None
        if verdict is not None and verdict.blocked:  # a UserPromptSubmit hook: nothing is sent or logged
            why = f"a UserPromptSubmit hook blocked the prompt: {verdict.blocked}"
            self.emit(Notice(why))
            return RunOutcome("blocked", ExitCode.CANCELLED, "", 0, why)
        if self.checkpointer is not None:
            self.checkpointer.mark_turn(len(self.messages), _prompt_text(user_message))
        if self.user_prompts:  # tools may note what the user asked for themselves (a URL typed in the prompt)
            self.registry.observe_prompt(_prompt_text(user_message, limit=None), self.ctx)
        for message in preamble or []:
            self.add_message(message)
        for text in verdict.before if verdict is not None else []:
            self.add_message({"role": "user", "content": f"[hook context] {text}"})
        self._mode_notes()
        self.add_message(user_message)
        for text in verdict.after if verdict is not None else []:
            self.add_message({"role": "user", "content": f"[hook context] {text}"})
        last_text = ""
        while True:
            if self.max_steps is not None and self.steps >= self.max_steps:
                msg = f"reached the step limit ({self.max_steps}); raise it with --max-steps"
                return RunOutcome("max_steps", ExitCode.BUDGET, last_text, self.steps, msg)
            if self.context is not None and self.context.should_compact(
                self.messages, self._prompt_tokens, self._sent_count
            ):
                await self.compact("auto")
            self.steps += 1
            news = self.notes() if self.notes is not None else []
            if news:
                self.add_message({"role": "user", "content": "[kimi] " + "\n[kimi] ".join(news)})
            for between in self.between_steps:
                for message in await between():
                    self.add_message(message)
            self._mode_notes()
            completion, stop = await self._step()
            last_text = completion.text or last_text
            if stop:
                return RunOutcome("loop_detected", ExitCode.ERROR, last_text, self.steps, stop)
            if not completion.tool_calls:
                go_on = await self.gate.stop() if self.gate is not None else ""
                if go_on:  # a Stop hook blocked the stop: its reason is the model's next message
                    self.add_message({"role": "user", "content": f"[hook] {go_on}"})
                    continue
                return RunOutcome("done", ExitCode.OK, completion.text, self.steps)
            if self.max_tokens is not None and self.usage.total_tokens >= self.max_tokens:
                msg = f"used {self.usage.total_tokens} tokens, over the budget of {self.max_tokens} (--max-tokens)"
                return RunOutcome("token_budget", ExitCode.BUDGET, last_text, self.steps, msg)

    async def _step(self) -> tuple[Completion, str]:
        self.emit(StepBegin(self.steps))
        started = time.perf_counter()
        callbacks = StreamCallbacks(
            on_text=lambda d: self.emit(TextDelta(d)),
            on_reasoning=lambda d: self.emit(ReasoningDelta(d)),
            on_retry=lambda a, w, e: self.emit(RetryNotice(a, round(w, 3), e)),
        )
        completion = await self._complete(callbacks)
        model_ms = (time.perf_counter() - started) * 1000
        if not completion.usage_reported:
            self._estimate_usage(completion)
        elif self.context is not None:
            self.context.observe_usage(self.messages, self.registry.schemas(), completion.usage.prompt_tokens)
        self.usage.add(completion.usage)
        self.emit(UsageUpdate(self.steps, completion.usage.as_dict(), self.usage.as_dict()))
        self.add_message(completion.to_message())
        if completion.usage_reported:
            self._prompt_tokens = completion.usage.prompt_tokens + completion.usage.completion_tokens
            self._sent_count = len(self.messages)
        tools_started = time.perf_counter()
        await self.registry.bring(c.name for c in completion.tool_calls)  # a late MCP server's tools
        calls = [self.registry.prepare(c.id, c.name, c.arguments) for c in completion.tool_calls]
        for call in calls:
            self._facts_of[(call.id, call.name, call.arguments)] = call.facts
        writers = sorted({c.name for c in calls if c.facts.writes})
        checkpoint = self.checkpointer if writers else None
        if checkpoint is not None:
            # The cut point for undo is this assistant message: undoing the step forgets the decision too.
            await checkpoint.snapshot("before", self.steps, len(self.messages) - 1, writers)
        stop = await self._run_calls(calls)
        if self.context is not None and calls:
            own = [path for c in calls if c.facts.writes for path in c.facts.paths or ()]
            visited = own + [path for c in calls for path in c.facts.read_paths]
            note = self.context.after_tools(own, any(c.facts.unknown_writes for c in calls), visited)
            if note:
                self.add_message({"role": "user", "content": note})
        if checkpoint is not None:
            await checkpoint.snapshot("after", self.steps, len(self.messages), writers)
        tools_ms = (time.perf_counter() - tools_started) * 1000
        self.tools_seconds += tools_ms / 1000
        self.emit(StepEnd(self.steps, round(model_ms, 3), round(tools_ms, 3)))
        self.recorder.end_step(self.steps)
        return completion, stop

    def _mode_notes(self) -> None:
        """What the model must be told about a mode change since the last request (plan mode begins or ends)."""
        for note in self.gate.notes(self.registry) if self.gate is not None else []:
            self.add_message({"role": "user", "content": note})

    async def compact(self, trigger: str = "manual") -> None:
        """Replace the history with a summary and a fresh pack; the session log keeps everything."""
        assert self.context is not None
        if self.gate is not None:
            await self.gate.before_compact(trigger)
        before = self.context.estimate(self.messages, self._prompt_tokens, self._sent_count)
        count = len(self.messages)
        new = await self.context.compact(self.provider, self.messages, self.ctx.todos, self.files_written())
        self.recorder.replace_history(new, "compaction")
        self.messages[:] = new
        self._prompt_tokens = 0
        self._sent_count = 0
        self.emit(Compacted(before, count, len(new)))
        for text in await self.gate.after_compact() if self.gate is not None else []:
            self.add_message({"role": "user", "content": f"[hook context] {text}"})

    async def _complete(self, callbacks: StreamCallbacks) -> Completion:
        """One request; a context overflow compacts the history and tries once more."""
        try:
            return await self.provider.complete(self.messages, self.registry.schemas(), callbacks, self._output_cap())
        except ContextOverflow as exc:
            if self.context is None:
                raise
            self.emit(Notice(f"the server says the request is too long ({exc}); compacting and trying again"))
            await self.compact("auto")
        try:
            return await self.provider.complete(self.messages, self.registry.schemas(), callbacks, self._output_cap())
        except ContextOverflow as exc:
            raise KimiError(f"the request is still too long after compaction: {exc}") from None

    def _output_cap(self) -> int | None:
        """max_tokens for the answer: the configured cap, never more than what the window has left."""
        if self.max_output_tokens is None:
            return None
        if self.context is None:
            return self.max_output_tokens
        used = self.context.estimate(self.messages, self._prompt_tokens, self._sent_count)
        room = self.context.context_length - used
        return max(256, min(self.max_output_tokens, room))

    def _estimate_usage(self, completion: Completion) -> None:
        """The server sent no usage: count from our own estimate so budgets and compaction still work."""
        if not self._usage_missing_told:
            self._usage_missing_told = True
            self.emit(Notice("the server reports no token usage; budgets and compaction use local estimates"))
        prompt = self.context.estimate(self.messages, 0, 0) if self.context is not None else 0
        completion.usage.prompt_tokens = prompt
        completion.usage.completion_tokens = max(1, len(completion.text + completion.reasoning) // 4)
        self._prompt_tokens = 0
        self._sent_count = 0

    def files_written(self) -> list[str]:
        """The files the history's calls wrote by name, in first-written order (the registry reads each call)."""
        written: list[str] = []
        for message in self.messages:
            for raw in message.get("tool_calls") or []:
                fn = raw.get("function") or {}
                key = (raw.get("id", ""), fn.get("name", ""), fn.get("arguments") or "")
                facts = self._facts_of.get(key)
                if facts is None:
                    facts = self._facts_of[key] = self.registry.prepare(*key).facts
                written += [p for p in facts.paths or () if facts.writes and p not in written]
        return written

    async def _run_calls(self, calls: list[PreparedCall]) -> str:
        """Run the turn's calls; returns a reason to stop the run, or ''."""
        images: list[str] = []
        answered: set[str] = set()

        def on_result(outcome: CallOutcome) -> None:
            output = cap_text(outcome.result.output, TOOL_OUTPUT_CAP)
            call, result = outcome.call, outcome.result
            self.emit(ToolOutput(call.id, call.name, output, result.is_error, round(outcome.ms, 3), result.display))
            if result.usage:  # a subagent's model usage adds to this run's
                self.usage.add(Usage.from_dict(result.usage))
            self.add_message({"role": "tool", "tool_call_id": call.id, "content": output or "(no output)"})
            answered.add(call.id)
            images.extend(result.images)

        runner = CallRunner(self.registry, self.ctx, self.guard, self.emit, on_result, self.gate, self.call_observer)
        try:
            stop = await runner.run(calls)
        except asyncio.CancelledError:
            # Leave no dangling tool-call ids in the log: a resumed session must be sendable as is.
            for call in calls:
                if call.id not in answered:
                    self.add_message({"role": "tool", "tool_call_id": call.id, "content": INTERRUPTED})
            raise
        if images:
            parts: list[dict[str, Any]] = [{"type": "text", "text": IMAGES_NOTE}]
            parts += [{"type": "image_url", "image_url": {"url": url}} for url in images]
            self.add_message({"role": "user", "content": parts})
        return stop


def _prompt_text(message: Message, limit: int | None = 200) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    text = " ".join(str(content or "").split())
    return text[:limit] if limit else text
