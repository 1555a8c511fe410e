"""Subagents over the tool limit: a subagent's kind is judged (plan mode, the Agent tool's
facts) by the tools it can reach, the session's deferred MCP tools included.

Each attack test sits beside the legitimate use that must keep working."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kimi_cli.agent.prefix import PrefixBuilder
from kimi_cli.agent.subagents.runner import SubagentFactory, SubagentRunner
from kimi_cli.approval.modes.plan import refusal
from kimi_cli.llm.types import Message
from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.glob_tool import Glob
from kimi_cli.tools.read_file import ReadFile
from kimi_cli.tools.shell import Shell
from kimi_cli.tools.write_file import WriteFile

from fakes import FakeProvider, calls, text


class NoArgs(BaseModel):
    pass


def mcp_tool(name: str, facts: ToolFacts, ran: list[str]) -> Tool[Any]:
    """A deferred MCP tool as the session holds it: a name, a description and its declared facts."""

    class Made(Tool[NoArgs]):
        Params = NoArgs

        async def run(self, params: NoArgs, ctx: ToolContext) -> ToolResult:
            ran.append(self.name)
            return ToolResult(f"ran {self.name}")

    made = Made()
    made.name, made.description, made.facts = name, f"{name} of the fs server", facts  # type: ignore[misc]
    return made


class SessionLog(list[dict[str, Any]]):
    def append_entry(self, entry: dict[str, Any]) -> None:
        self.append(entry)


def runner_for(root: Path, provider: FakeProvider, ran: list[str]) -> SubagentRunner:
    """A session over the tool limit: its built-ins, and the fs server's tools waiting in the deferred pool."""
    builder = PrefixBuilder(root)

    def system(task: str, mode: str) -> Message:
        return builder.message("PACK", mode)

    def session_tools() -> list[Any]:
        return [ReadFile(), Glob(), WriteFile(), Shell(sandbox=None)]  # type: ignore[arg-type]

    pool = [mcp_tool("mcp__fs__read_file", READS, ran), mcp_tool("mcp__fs__write_file", ToolFacts(writes=True), ran)]
    factory = SubagentFactory(root, session_tools, lambda run_id: provider, system, SessionLog())
    factory.deferred = lambda: (pool, 128)
    return SubagentRunner(factory, lambda event: None)


def kind_file(root: Path, name: str, tools: str) -> None:
    (root / ".kimi" / "agents").mkdir(parents=True, exist_ok=True)
    (root / ".kimi" / "agents" / f"{name}.md").write_text(f"---\nname: {name}\ntools: [{tools}]\n---\nHelp.\n")


def test_a_kind_that_reaches_a_deferred_mcp_tool_that_writes_is_not_judged_read_only(repo: Path) -> None:
    """kimi_cli/agent/subagents/runner.py `kind_facts` unions the facts of `factory.tools()` only, the session's
    declared tools; `spawn` then also hands the kind the deferred MCP tools it allows. A kind naming
    mcp__fs__write_file is judged read-only, so plan mode lets the model start it (refusal() is None), and the
    subagent (whose gate has no mode) calls the tool by its full name: a write in plan mode."""
    kind_file(repo, "docs", "ReadFile, mcp__fs__write_file")
    ran: list[str] = []
    sub = FakeProvider(calls(("mcp__fs__write_file", {})), text("wrote it"))
    runner = runner_for(repo, sub, ran)
    facts = runner.kind_facts()["docs"]
    plan_allows = refusal("Agent", facts, []) is None
    asyncio.run(runner.spawn("update the docs", "docs", []))
    assert "mcp__fs__write_file" in ran  # the kind does reach the writing tool ...
    assert not plan_allows, "plan mode starts a subagent that writes"  # ... so its facts must say so
    assert facts.writes or facts.unknown_writes


def test_a_kind_that_reaches_only_reading_mcp_tools_stays_read_only_and_uses_them(repo: Path) -> None:
    kind_file(repo, "reader", "ReadFile, mcp__fs__read_file")
    ran: list[str] = []
    sub = FakeProvider(calls(("mcp__fs__read_file", {})), text("read it"))
    runner = runner_for(repo, sub, ran)
    facts = runner.kind_facts()["reader"]
    assert facts.read_only and refusal("Agent", facts, []) is None
    report, _ = asyncio.run(runner.spawn("read the docs", "reader", []))
    assert report == "read it" and ran == ["mcp__fs__read_file"]


def test_an_explore_subagent_never_runs_a_deferred_tool_that_writes_even_by_its_full_name(repo: Path) -> None:
    """Held: the pool an explore subagent gets is filtered by its kind, and `registry.undeclared` is that pool."""
    ran: list[str] = []
    sub = FakeProvider(calls(("mcp__fs__write_file", {})), text("done"))
    runner = runner_for(repo, sub, ran)
    asyncio.run(runner.spawn("look around", "explore", []))
    assert "mcp__fs__write_file" not in ran
    assert runner.kind_facts()["explore"].read_only
