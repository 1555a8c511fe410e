"""Subagents in-process: kinds and their tools, the factory seam, reports, usage, and the parent's change note."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kimi_cli.agent.prefix import PrefixBuilder
from kimi_cli.agent.subagents.kinds import REPORT_CAP, REPORT_RULE, final_report
from kimi_cli.agent.subagents.runner import SubagentFactory, SubagentRunner
from kimi_cli.llm.types import Message
from kimi_cli.tools.glob_tool import Glob
from kimi_cli.tools.read_file import ReadFile
from kimi_cli.tools.shell import Shell
from kimi_cli.tools.str_replace import StrReplaceFile
from kimi_cli.tools.subagent import AgentTool
from kimi_cli.tools.todo import SetTodoList
from kimi_cli.tools.write_file import WriteFile

from fakes import FakeProvider, agent_for, calls, context_for, text, user


class SessionLog(list[dict[str, Any]]):
    def append_entry(self, entry: dict[str, Any]) -> None:
        self.append(entry)


def session_tools() -> list[Any]:
    return [ReadFile(), Glob(), WriteFile(), StrReplaceFile(), SetTodoList(), Shell(sandbox=None)]  # type: ignore[arg-type]


def factory_for(root: Path, providers: dict[str, FakeProvider], log: SessionLog) -> SubagentFactory:
    builder = PrefixBuilder(root)

    def system(task: str, mode: str) -> Message:
        return builder.message("PACK FOR " + task, mode)

    tasks = iter(providers)
    return SubagentFactory(root, session_tools, lambda run_id: providers[next(tasks)], system, log)


def test_explore_gets_only_tools_that_change_nothing_and_coder_gets_them_all(repo: Path) -> None:
    runner = SubagentRunner(factory_for(repo, {}, SessionLog()), lambda e: None)
    explore = [t.name for t in session_tools() if runner.kinds["explore"].allows(t)]
    coder = [t.name for t in session_tools() if runner.kinds["coder"].allows(t)]
    assert explore == ["ReadFile", "Glob", "SetTodoList"]
    assert coder == [t.name for t in session_tools()]
    facts = runner.kind_facts()
    assert facts["explore"].read_only and not facts["explore"].writes
    assert facts["coder"].unknown_writes and facts["coder"].commands


def test_a_custom_kind_takes_its_tools_and_prompt_from_its_file(repo: Path) -> None:
    (repo / ".kimi" / "agents").mkdir(parents=True)
    (repo / ".kimi" / "agents" / "auditor.md").write_text(
        "---\nname: auditor\ndescription: checks\ntools: [ReadFile, 'WriteFile']\n---\nBe strict.\n"
    )
    (repo / ".kimi" / "agents" / "broken.md").write_text("no front matter\n")
    runner = SubagentRunner(factory_for(repo, {}, SessionLog()), lambda e: None)
    assert set(runner.kinds) == {"explore", "coder", "auditor"}
    auditor = runner.kinds["auditor"]
    assert [t.name for t in session_tools() if auditor.allows(t)] == ["ReadFile", "WriteFile"]
    assert auditor.mode() == REPORT_RULE + "\n\nBe strict."
    facts = runner.kind_facts()["auditor"]
    assert facts.writes and not facts.commands


def test_a_subagent_starts_fresh_with_its_kind_at_the_end_and_logs_its_steps_nested(repo: Path) -> None:
    provider = FakeProvider(calls(("ReadFile", {"path": "calc.py"})), text("calc subtracts"))
    log = SessionLog()
    notices: list[Any] = []
    runner = SubagentRunner(factory_for(repo, {"study": provider}, log), notices.append)
    report, usage = asyncio.run(runner.spawn("study calc", "explore", ["calc.py"]))
    assert report == "calc subtracts" and usage["total_tokens"] == 30
    first = provider.requests[0]
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert first.messages[0]["content"].endswith(REPORT_RULE)
    assert "PACK FOR study calc" in first.messages[0]["content"]
    assert first.messages[1]["content"] == "study calc\n\nStart from these files: calc.py"
    assert "WriteFile" not in first.tools and "Agent" not in first.tools
    assert {e["kind"] for e in log} == {"subagent"} and len({e["run"] for e in log}) == 1
    assert [n.message.split(" ")[2] for n in notices] == ["(explore)", "finished:"]


def test_a_coder_subagents_edit_reaches_the_parents_change_note(repo: Path) -> None:
    edit = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}
    sub = FakeProvider(calls(("StrReplaceFile", edit)), text("fixed calc.py"))
    runner = SubagentRunner(factory_for(repo, {"fix": sub}, SessionLog()), lambda e: None)
    ctx = context_for(repo)
    parent = FakeProvider(calls(("Agent", {"task": "fix add", "kind": "coder"})), text("done"))
    tools = [ReadFile(), AgentTool(runner.spawn, runner.kind_facts())]
    agent = agent_for(parent, tools, repo, context=ctx, messages=[ctx.system_message("fix add")])
    asyncio.run(agent.run(user("fix add")))
    note = parent.requests[1].messages[-1]
    assert note["role"] == "user" and note["content"].startswith("[kimi] Files changed")
    assert "return a + b" in note["content"]
    assert agent.usage.prompt_tokens == 10 + 2 * 10 + 10  # the subagent's two requests roll up


def test_an_explore_subagent_is_a_read_and_brings_no_note(repo: Path) -> None:
    sub = FakeProvider(text("nothing to change"))
    runner = SubagentRunner(factory_for(repo, {"look": sub}, SessionLog()), lambda e: None)
    ctx = context_for(repo)
    parent = FakeProvider(calls(("Agent", {"task": "look", "kind": "explore"})), text("done"))
    agent = agent_for(parent, [AgentTool(runner.spawn, runner.kind_facts())], repo, context=ctx,
                      messages=[ctx.system_message("look")])  # fmt: skip
    (repo / "README.md").write_text("# changed by someone else meanwhile\n")
    asyncio.run(agent.run(user("look")))
    assert parent.requests[1].messages[-1]["role"] == "tool"


def test_an_unknown_kind_is_refused_with_the_known_ones(repo: Path) -> None:
    runner = SubagentRunner(factory_for(repo, {}, SessionLog()), lambda e: None)
    parent = FakeProvider(calls(("Agent", {"task": "x", "kind": "wizard"})), text("ok"))
    asyncio.run(agent_for(parent, [AgentTool(runner.spawn, runner.kind_facts())], repo).run(user("x")))
    assert parent.requests[1].messages[-1]["content"].startswith("error: unknown subagent kind 'wizard'")


def test_a_report_says_when_the_subagent_stopped_early_and_is_capped() -> None:
    assert final_report("", "done", "") == "(the subagent gave no report)"
    assert final_report("half", "max_steps", "limit").endswith("[the subagent stopped early: max_steps: limit]")
    assert final_report("x" * (REPORT_CAP + 10), "done", "").endswith("[report cut]")


def test_a_subagent_searches_the_sessions_deferred_mcp_tools_its_kind_allows(repo: Path) -> None:
    """Over the tool limit the session's MCP tools wait behind SearchTools; a subagent gets its own SearchTools
    over those its kind may use (an explore subagent never sees a tool that writes), and what it finds or
    calls by name joins the end of its own block."""
    from pydantic import BaseModel

    from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult

    class NoArgs(BaseModel):
        pass

    def mcp_tool(name: str, description: str, facts: ToolFacts) -> Tool[Any]:
        class Made(Tool[NoArgs]):
            Params = NoArgs

            async def run(self, params: NoArgs, ctx: ToolContext) -> ToolResult:
                return ToolResult(f"ran {self.name}")

        made = Made()
        made.name, made.description, made.facts = name, description, facts  # type: ignore[misc]
        return made

    pool = [mcp_tool("mcp__bill__get_invoice", "Read one invoice", READS),
            mcp_tool("mcp__bill__void_invoice", "Void an invoice", ToolFacts(writes=True)),
            mcp_tool("mcp__bill__list_refunds", "List refunds", READS)]  # fmt: skip
    sub = FakeProvider(
        calls(("SearchTools", {"query": "invoice"})),
        calls(("mcp__bill__get_invoice", {}), ("mcp__bill__list_refunds", {})),
        text("invoice 7 is paid"),
    )
    factory = factory_for(repo, {"look": sub}, SessionLog())
    factory.deferred = lambda: (pool, 128)
    runner = SubagentRunner(factory, lambda e: None)
    report, _ = asyncio.run(runner.spawn("check invoice 7", "explore", []))
    assert report == "invoice 7 is paid"
    first, second, third = sub.requests
    assert first.tools[-1] == "SearchTools" and not any(n.startswith("mcp__") for n in first.tools)
    found = second.messages[-1]["content"]
    assert "mcp__bill__get_invoice" in found and "void_invoice" not in found  # explore: no tool that writes
    assert second.tools[: len(first.tools)] == first.tools and second.tools[-1] == "mcp__bill__get_invoice"
    results = [m["content"] for m in third.messages if m["role"] == "tool"][-2:]
    assert results == ["ran mcp__bill__get_invoice", "ran mcp__bill__list_refunds"]  # called by its full name
    assert third.tools[-2:] == ["mcp__bill__get_invoice", "mcp__bill__list_refunds"]


def test_in_plan_mode_a_subagents_own_gate_refuses_a_write_whatever_its_kind(repo: Path) -> None:
    """The Agent tool is refused in plan mode for a kind that may write; a kind judged read-only that still
    reaches a writing tool (a server added later) meets the second guard: its gate holds the session's mode."""
    from kimi_cli.agent.gate import SessionGate
    from kimi_cli.approval.modes.state import ModeState

    sub = FakeProvider(calls(("WriteFile", {"path": "new.txt", "content": "x"})), text("tried"))
    factory = factory_for(repo, {"w": sub}, SessionLog())
    factory.gate = lambda: SessionGate(ModeState("plan"), subagent=True)
    runner = SubagentRunner(factory, lambda e: None)
    report, _ = asyncio.run(runner.spawn("write a file", "coder", []))
    assert report == "tried" and not (repo / "new.txt").exists()
    refusal = [m["content"] for m in sub.requests[1].messages if m["role"] == "tool"][-1]
    assert "plan" in refusal.lower()
