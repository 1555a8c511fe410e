"""Running one model turn's tool calls: identical calls run once, consecutive reads run concurrently.

A call that writes or runs a command is a barrier: it waits for the reads before it, and the reads after
it wait for it. Results are returned in the order the model asked for them, so the history (and with it
the session log and the prompt cache) does not depend on which read finished first. Everything here reads
the prepared calls' facts; no tool is known by name.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kimi_cli.agent.events import ErrorNotice, Event, ToolCall
from kimi_cli.agent.gate import SessionGate
from kimi_cli.agent.guard import LoopGuard
from kimi_cli.tools.base import ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.registry import PreparedCall, ToolRegistry

# The id of the call whose tool is running (each call runs in a task of its own): an approval is told with it.
RUNNING_CALL: contextvars.ContextVar[str] = contextvars.ContextVar("running_call", default="")


@dataclass
class CallOutcome:
    call: PreparedCall
    result: ToolResult
    ms: float


def plan_sharing(calls: list[PreparedCall]) -> list[int]:
    """For each call, the index of the call whose result it takes: itself, or an identical call before it
    with nothing in between that could change the answer (any call that is not a read)."""
    owner: list[int] = []
    seen: dict[str, int] = {}
    for index, call in enumerate(calls):
        if call.key in seen:
            owner.append(seen[call.key])
            continue
        owner.append(index)
        if not call.facts.read_only:
            seen.clear()
        seen[call.key] = index
    return owner


def plan_batches(calls: list[PreparedCall]) -> list[list[int]]:
    """Indexes of the calls, grouped: a run of calls of one group (reads, subagents) is one batch; every
    call without a group is a batch of its own."""
    batches: list[list[int]] = []
    last: str | None = None
    for index, call in enumerate(calls):
        if call.group is not None and call.group == last:
            batches[-1].append(index)
        else:
            batches.append([index])
        last = call.group
    return batches


class CallObserver(Protocol):
    """Sees each call that ran, by its facts, before its result goes on: the language servers open what a call
    read and report what an edit changed (kimi_cli.extensions.lsp.manager). It may add to the result; it never
    raises and never holds a read."""

    async def after_call(self, facts: ToolFacts, result: ToolResult) -> None: ...


class CallRunner:
    """Runs a turn's calls under the loop guard; reports each result through `on_result` in order."""

    def __init__(
        self,
        registry: ToolRegistry,
        ctx: ToolContext,
        guard: LoopGuard,
        emit: Callable[[Event], None],
        on_result: Callable[[CallOutcome], None],
        gate: SessionGate | None = None,
        observer: CallObserver | None = None,
    ) -> None:
        self.registry = registry
        self.ctx = ctx
        self.guard = guard
        self.emit = emit
        self.on_result = on_result
        self.gate = gate  # plan mode and PreToolUse/PostToolUse hooks
        self.observer = observer
        self._limits: dict[str, asyncio.Semaphore] = {}

    async def _one(self, call: PreparedCall, concurrent: bool) -> CallOutcome:
        began = time.perf_counter()
        RUNNING_CALL.set(call.id)
        run = await self.gate.before_call(call, self.registry) if self.gate is not None else call
        if isinstance(run, ToolResult):  # refused (plan mode) or blocked (a hook): that is the answer
            return CallOutcome(call, run, (time.perf_counter() - began) * 1000)
        if concurrent and run.group is not None:
            limit = self._limits.setdefault(run.group, asyncio.Semaphore(run.limit))
            async with limit:
                result = await self.registry.run(run, self.ctx)
        else:
            result = await self.registry.run(run, self.ctx)
        if self.observer is not None and run.error is None:  # before PostToolUse: hooks see the diagnostics too
            await self.observer.after_call(run.facts, result)
        if self.gate is not None:
            result = await self.gate.after_call(run, result)
        return CallOutcome(call, result, (time.perf_counter() - began) * 1000)

    async def run(self, calls: list[PreparedCall]) -> str:
        """Run every call; returns why the run must stop ('' to go on). Unanswered calls raise on cancel."""
        owner = plan_sharing(calls)
        outcomes: dict[int, CallOutcome] = {}
        stop = ""
        for batch in plan_batches(calls):
            if stop:
                for index in batch:
                    skipped = ToolResult("skipped: the run was stopped", is_error=True)
                    self.on_result(CallOutcome(calls[index], skipped, 0.0))
                continue
            for index in batch:
                self.emit(ToolCall(calls[index].id, calls[index].name, calls[index].arguments))
            todo = [i for i in batch if owner[i] == i]
            done = await asyncio.gather(*(self._one(calls[i], len(todo) > 1) for i in todo))
            outcomes.update(zip(todo, done, strict=True))
            for index in batch:
                call = calls[index]
                shared = outcomes[owner[index]]
                if owner[index] != index:  # an identical call earlier in this turn: same answer, not run again
                    result = ToolResult(shared.result.output, shared.result.is_error, [], shared.result.display)
                    self.on_result(CallOutcome(call, result, 0.0))
                    continue
                count = self.guard.record(call.key, shared.result.output)
                reminder = self.guard.reminder(count)
                if reminder:
                    shared.result.output += reminder
                if self.guard.should_stop(count):
                    stop = (
                        f"the model made the same {call.name} call ({call.arguments[:200]}) {count} times in a "
                        "row with the same result; the run is stopped"
                    )
                    self.emit(ErrorNotice(stop))
                self.on_result(shared)
        return stop
