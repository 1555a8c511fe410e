"""Running one model turn's tool calls: identical calls run once, consecutive reads run concurrently.

A call that writes or runs a command is a barrier: it waits for the reads before it, and the reads after
it wait for it. Results are returned in the order the model asked for them, so the history (and with it
the session log and the prompt cache) does not depend on which read finished first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from kimi_cli.agent.events import ErrorNotice, Event, ToolCall
from kimi_cli.agent.guard import LoopGuard, call_key
from kimi_cli.llm.types import ToolCallRequest
from kimi_cli.tools.base import ToolContext, ToolResult
from kimi_cli.tools.registry import ToolRegistry

MAX_PARALLEL = {"read": 8, "agent": 4}


@dataclass
class CallOutcome:
    call: ToolCallRequest
    result: ToolResult
    ms: float


def plan_sharing(calls: list[ToolCallRequest], registry: ToolRegistry) -> list[int]:
    """For each call, the index of the call whose result it takes: itself, or an identical call before it
    with nothing in between that could change the answer (any call that is not a read)."""
    owner: list[int] = []
    seen: dict[str, int] = {}
    for index, call in enumerate(calls):
        key = call_key(call.name, call.arguments)
        if key in seen:
            owner.append(seen[key])
            continue
        owner.append(index)
        if not registry.is_read_only(call.name, call.arguments):
            seen.clear()
        seen[key] = index
    return owner


def plan_batches(calls: list[ToolCallRequest], registry: ToolRegistry) -> list[list[int]]:
    """Indexes of the calls, grouped: a run of reads (or of subagents) is one batch, every other call a batch
    of its own."""
    batches: list[list[int]] = []
    last: str | None = None
    for index, call in enumerate(calls):
        key = registry.batch_key(call.name, call.arguments)
        if key is not None and key == last:
            batches[-1].append(index)
        else:
            batches.append([index])
        last = key
    return batches


class CallRunner:
    """Runs a turn's calls under the loop guard; reports each result through `on_result` in order."""

    def __init__(
        self,
        registry: ToolRegistry,
        ctx: ToolContext,
        guard: LoopGuard,
        emit: Callable[[Event], None],
        on_result: Callable[[CallOutcome], None],
    ) -> None:
        self.registry = registry
        self.ctx = ctx
        self.guard = guard
        self.emit = emit
        self.on_result = on_result
        self._limits = {key: asyncio.Semaphore(n) for key, n in MAX_PARALLEL.items()}

    async def _one(self, call: ToolCallRequest, concurrent: bool) -> CallOutcome:
        began = time.perf_counter()
        if concurrent:
            key = self.registry.batch_key(call.name, call.arguments) or "read"
            async with self._limits.get(key, self._limits["read"]):
                result = await self.registry.call(call.name, call.arguments, self.ctx)
        else:
            result = await self.registry.call(call.name, call.arguments, self.ctx)
        return CallOutcome(call, result, (time.perf_counter() - began) * 1000)

    async def run(self, calls: list[ToolCallRequest]) -> str:
        """Run every call; returns why the run must stop ('' to go on). Unanswered calls raise on cancel."""
        owner = plan_sharing(calls, self.registry)
        outcomes: dict[int, CallOutcome] = {}
        stop = ""
        for batch in plan_batches(calls, self.registry):
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
                count = self.guard.record(call.name, call.arguments, shared.result.output)
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
