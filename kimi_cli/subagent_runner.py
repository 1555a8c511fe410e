"""SubagentRunner: what the Agent tool calls. It builds a fresh agent over the session's runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kimi_cli.agent.events import Event, Notice
from kimi_cli.agent.loop import Agent
from kimi_cli.agent.prompt import system_prompt
from kimi_cli.agent.subagents import (
    REPORT_RULE,
    SUB_BUDGET_SHARE,
    SUB_MAX_STEPS,
    AgentKind,
    FileLocks,
    NestedRecorder,
    builtin_kinds,
    custom_kinds,
    final_report,
    next_run_id,
)
from kimi_cli.context.agents_md import load_agents_md
from kimi_cli.llm.provider import ChatProvider
from kimi_cli.tools.base import Tool, ToolContext
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.workspace import Workspace

if TYPE_CHECKING:
    from kimi_cli.runtime import Runtime


class SubagentRunner:
    def __init__(self, runtime: Runtime, tools: Callable[[], list[Tool[Any]]], emit: Callable[[Event], None]) -> None:
        self.runtime = runtime
        self.tools = tools  # the session's tools, built fresh (never the Agent tool: no nesting)
        self.emit = emit
        self.kinds: dict[str, AgentKind] = {**builtin_kinds(), **custom_kinds(runtime.workdir)}
        self.locks = FileLocks()
        self.parent: Agent | None = None  # usage rolls up into it

    def _system(self, kind: AgentKind, task: str) -> dict[str, Any]:
        rt = self.runtime
        parts = [system_prompt(rt.workdir, REPORT_RULE + ("\n\n" + kind.prompt if kind.prompt else ""))]
        agents = load_agents_md(rt.workdir)
        if agents:
            parts.append("Project instructions (AGENTS.md):\n" + agents)
        packer = rt.context.packer
        if packer is not None:
            pack = packer.pack(task, max(4000, int(rt.context.budget * SUB_BUDGET_SHARE)), persist=False)
            parts.append("The repository, packed for your task:\n" + pack.text)
        return {"role": "system", "content": "\n\n".join(parts)}

    async def spawn(self, task: str, kind_name: str, files: list[str]) -> tuple[str, dict[str, Any]]:
        rt = self.runtime
        kind = self.kinds[kind_name]
        tools = [t for t in self.tools() if kind.tools is None or t.name in kind.tools]
        run_id = next_run_id()
        provider = ChatProvider(
            rt.endpoint, rt.config.retry, f"{rt.session.id}-{run_id}", transport=rt.config.transport
        )
        rt.providers.append(provider)
        recorder = NestedRecorder(rt.session, run_id)
        user = task + (f"\n\nStart from these files: {', '.join(files)}" if files else "")
        agent = Agent(
            provider=provider,
            registry=ToolRegistry(tools),
            ctx=ToolContext(workspace=Workspace(rt.workdir), services={"file_locks": self.locks}),
            recorder=recorder,
            emit=lambda event: None,  # the parent sees the report, not the steps; the log keeps them
            messages=[self._system(kind, task)],
            max_steps=SUB_MAX_STEPS,
            max_output_tokens=rt.config.max_output_tokens,
        )
        recorder.append_message(agent.messages[0])
        self.emit(Notice(f"subagent {run_id} ({kind.name}) started: {task.splitlines()[0][:100]}"))
        outcome = await agent.run({"role": "user", "content": user})
        if self.parent is not None:
            self.parent.usage.add(agent.usage)
        report = final_report(outcome.text, outcome.reason, outcome.message)
        self.emit(Notice(f"subagent {run_id} finished: {outcome.reason}, {agent.steps} steps"))
        return report, agent.usage.as_dict()
