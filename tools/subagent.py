"""Agent: hand a self-contained piece of work to a subagent with a fresh context; get its report back.

The tool never imports the agent loop: the session gives it a `spawn(task, kind, files)` callable through
the tool context. Several Agent calls in one answer run concurrently (up to 4); subagents share the
approvals, and cannot start subagents of their own. They share the workspace and sandbox too, unless the call
(or the custom kind) says `isolation: "worktree"`: the subagent then works in its own git worktree and branch,
with a sandbox that may write only there, and its branch is merged back when it ends (a conflict is part of
the result, with its hunks).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.errors import ToolError

Spawn = Callable[..., Awaitable[tuple[str, dict[str, Any]]]]  # (task, kind, files, isolation=None)
MAX_CONCURRENT = 4
BUILTIN_KINDS = ("explore", "coder")


class AgentParams(BaseModel):
    task: str = Field(description="The whole job: goal, files, constraints. It sees nothing of this conversation.")
    kind: str = Field(
        "explore",
        description="explore: read-only; coder: edits and runs commands; or a custom agent of .kimi/agents/.",
    )
    files: list[str] | None = Field(None, description="Files to start from.")
    isolation: Literal["worktree"] | None = Field(
        None,
        description="worktree: the subagent edits its own git worktree and branch, merged back into this "
        "checkout when it ends (for coders working in parallel on the same files); a conflict comes back here.",
    )


class AgentTool(Tool[AgentParams]):
    name = "Agent"
    description = (
        "Hand a self-contained job to a subagent with a fresh context (its own pack, at most 150 steps); you get "
        "only its final report back. Worth it to study a subsystem without filling your context, or for "
        "independent parts of a large change: several Agent calls in one answer run at once. Not for what one "
        "Grep or ReadFile answers, nor for work that needs this conversation. "
        'Example: {"task": "List every caller of parse_date in src/ and say which pass a tz", "kind": "explore"}'
    )
    Params = AgentParams
    concurrent_group = "subagents"  # consecutive calls run together, MAX_CONCURRENT at a time
    max_concurrent = MAX_CONCURRENT

    def __init__(self, spawn: Spawn, kinds: dict[str, ToolFacts]) -> None:
        """`kinds`: each kind's name and what its tools may do together (explore reads, coder writes)."""
        self.spawn = spawn
        self.kinds = kinds
        custom = [name for name in kinds if name not in BUILTIN_KINDS]
        if custom:  # the model cannot guess the names of .kimi/agents/*.md
            self.description = f"{self.description} Custom kinds here: {', '.join(custom)}."  # type: ignore[misc]

    def declared(self) -> ToolFacts:
        return ToolFacts.union(self.kinds.values())

    def facts_for(self, params: AgentParams) -> ToolFacts:
        return self.kinds.get(params.kind, READS)  # an unknown kind is refused without running

    async def run(self, params: AgentParams, ctx: ToolContext) -> ToolResult:
        if params.kind not in self.kinds:
            raise ToolError(f"unknown subagent kind {params.kind!r}; known: {', '.join(self.kinds)}")
        report, usage = await self.spawn(params.task, params.kind, list(params.files or []), isolation=params.isolation)
        tokens = usage.get("total_tokens", 0)
        display = {"kind": "subagent", "agent": params.kind, "tokens": tokens}
        return ToolResult(report, display=display, usage=usage)
