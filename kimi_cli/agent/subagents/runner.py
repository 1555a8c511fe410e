"""SubagentRunner: what the Agent tool calls. It builds a fresh agent from a factory the runtime hands it.

The runner never sees the Runtime: `SubagentFactory` holds the few things a subagent needs (its tools, a
model client, the system message, where to log), so runtime -> subagent_runner is the only import.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.agent.events import Event, Notice
from kimi_cli.agent.gate import SessionGate
from kimi_cli.agent.loop import Agent, Provider
from kimi_cli.agent.subagents.kinds import (
    SUB_MAX_STEPS,
    AgentKind,
    NestedRecorder,
    builtin_kinds,
    custom_kinds,
    final_report,
    next_run_id,
)
from kimi_cli.llm.types import Message
from kimi_cli.tools.base import Tool, ToolContext, ToolFacts
from kimi_cli.tools.file_lock import FileLocks
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.workspace import Workspace


@dataclass
class SubagentFactory:
    """What a subagent takes from its session."""

    workdir: Path
    tools: Callable[[], list[Tool[Any]]]  # the session's tools, built fresh (never the Agent tool: no nesting)
    provider: Callable[[str], Provider]  # a model client for one run id
    system: Callable[[str, str], Message]  # (task, kind's part) -> the system message, pack ranked for the task
    log: Any  # the session: has append(entry); a run's steps are logged in it, nested
    max_output_tokens: int | None = None
    gate: Callable[[], SessionGate] | None = None  # the session's hooks for the subagent's calls and its stop
    read_roots: list[tuple[str, Path]] = field(default_factory=list)  # the user's skill folders (ReadFile)
    # The session's deferred MCP tools (over the model's tool limit) and that limit: a subagent gets its own
    # SearchTools over those its kind allows (kimi_cli.extensions.mcp.deferred).
    deferred: Callable[[], tuple[list[Tool[Any]], int]] | None = None
    # `isolation: "worktree"`: the session's tools for another checkout (Shell and tasks on a sandbox whose
    # workspace is that folder), and what closes that sandbox (kimi_cli.agent.subagents.isolated).
    tools_in: Callable[[Path], tuple[list[Tool[Any]], Callable[[], Awaitable[None]]]] | None = None


class SubagentRunner:
    def __init__(self, factory: SubagentFactory, emit: Callable[[Event], None]) -> None:
        self.factory = factory
        self.emit = emit
        self.kinds: dict[str, AgentKind] = {**builtin_kinds(), **custom_kinds(factory.workdir)}
        self.locks = FileLocks()
        self.merging = asyncio.Lock()  # one worktree merges into the parent checkout at a time
        self._trees = itertools.count(1)

    def kind_facts(self) -> dict[str, ToolFacts]:
        """Each kind's name and what a subagent of it may do: the Agent tool's facts per call. The deferred
        MCP tools count too: a kind may reach them through its own SearchTools (or by full name)."""
        tools = self.factory.tools() + (self.factory.deferred()[0] if self.factory.deferred is not None else [])
        return {name: kind.facts(tools) for name, kind in sorted(self.kinds.items())}

    async def spawn(
        self, task: str, kind_name: str, files: list[str], isolation: str | None = None
    ) -> tuple[str, dict[str, Any]]:
        kind = self.kinds[kind_name]
        isolation = isolation or kind.isolation
        if isolation not in (None, "worktree"):
            return f"[unknown isolation {isolation!r}: worktree is the one there is]", {}
        if isolation == "worktree" and not kind.read_only and self.factory.tools_in is not None:
            return await self._in_worktree(task, kind, files)
        return await self._run(task, kind, files, self.factory.tools(), self.factory.workdir)

    async def _in_worktree(self, task: str, kind: AgentKind, files: list[str]) -> tuple[str, dict[str, Any]]:
        from kimi_cli.agent.subagents.isolated import land, open_tree
        from kimi_cli.errors import KimiError

        assert self.factory.tools_in is not None
        parent = self.factory.workdir
        try:
            tree = await asyncio.to_thread(open_tree, parent, f"w{next(self._trees)}")
        except KimiError as exc:
            return f"[the subagent did not start: no worktree for it: {exc}]", {}
        tools, close = self.factory.tools_in(tree.path)
        self.emit(Notice(f"subagent worktree {tree.path} (branch {tree.branch})"))
        try:
            report, usage = await self._run(task, kind, files, tools, tree.path)
        finally:
            await close()
        landing = await land(parent, tree, (task.splitlines() or [""])[0][:100], self.merging)
        self.emit(Notice(landing.note.splitlines()[0][:200]))
        return f"{report}\n{landing.note}", usage

    async def _run(
        self, task: str, kind: AgentKind, files: list[str], session_tools: list[Tool[Any]], workdir: Path
    ) -> tuple[str, dict[str, Any]]:
        tools = [t for t in session_tools if kind.allows(t)]
        pool, limit = self.factory.deferred() if self.factory.deferred is not None else ([], 0)
        pool = [t for t in pool if kind.allows(t) and t.name not in {have.name for have in tools}]
        deferred = None
        if pool:
            from kimi_cli.extensions.mcp.deferred import DeferredTools

            deferred = DeferredTools(pool, limit)
            tools += deferred.search_tool()
        registry = ToolRegistry(tools)
        if deferred is not None:
            deferred.attach(registry)  # found or named tools join the end of the subagent's own block
        run_id = next_run_id()
        recorder = NestedRecorder(self.factory.log, run_id)
        user = task + (f"\n\nStart from these files: {', '.join(files)}" if files else "")
        agent = Agent(
            provider=self.factory.provider(run_id),
            registry=registry,
            ctx=ToolContext(workspace=Workspace(workdir), read_roots=self.factory.read_roots, file_locks=self.locks),
            recorder=recorder,
            emit=lambda event: None,  # the parent sees the report, not the steps; the log keeps them
            messages=[self.factory.system(task, kind.mode())],
            max_steps=SUB_MAX_STEPS,
            max_output_tokens=self.factory.max_output_tokens,
            user_prompts=False,
            gate=self.factory.gate() if self.factory.gate is not None else None,
        )
        recorder.append_message(agent.messages[0])
        self.emit(Notice(f"subagent {run_id} ({kind.name}) started: {(task.splitlines() or [''])[0][:100]}"))
        outcome = await agent.run({"role": "user", "content": user})
        report = final_report(outcome.text, outcome.reason, outcome.message)
        self.emit(Notice(f"subagent {run_id} finished: {outcome.reason}, {agent.steps} steps"))
        return report, agent.usage.as_dict()
