"""Tool facts: what each call may do, as the tools declare it; the loop guard; events as the log keeps them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp.types as mcp_types

from kimi_cli.agent.events import Finished, TextDelta, ToolCall
from kimi_cli.agent.guard import LoopGuard
from kimi_cli.agent.toolbox import default_tools
from kimi_cli.extensions.mcp.config import ServerConfig
from kimi_cli.extensions.mcp.tool import McpTool, mcp_facts
from kimi_cli.tools.base import ANYTHING, NOTHING, READS, ToolContext, ToolFacts
from kimi_cli.tools.git_tool import Git
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.subagent import AgentTool
from kimi_cli.tools.web import FetchURL, prompt_urls
from kimi_cli.tools.workspace import Workspace


def facts_of(registry: ToolRegistry, name: str, arguments: str) -> ToolFacts:
    return registry.prepare("1", name, arguments).facts


def test_file_edits_name_the_path_they_write_and_reads_write_nothing() -> None:
    registry = default_tools()
    write = facts_of(registry, "WriteFile", '{"path": "a/b.py", "content": "x"}')
    edit = facts_of(registry, "StrReplaceFile", '{"path": "c.py", "edit": {"old": "a", "new": "b"}}')
    assert (write.writes, write.paths) == (True, ("a/b.py",)) and not write.unknown_writes
    assert edit.paths == ("c.py",)
    for name, args in [("ReadFile", '{"path": "a"}'), ("Glob", '{"pattern": "*"}'), ("Grep", '{"pattern": "x"}')]:
        facts = facts_of(registry, name, args)
        assert facts.reads and facts.read_only and not facts.network
    assert facts_of(registry, "SetTodoList", '{"todos": []}') == NOTHING


def test_git_reads_for_status_and_may_write_for_commit() -> None:
    registry = ToolRegistry([Git()])
    assert facts_of(registry, "Git", '{"command": "status"}').read_only
    assert facts_of(registry, "Git", '{"command": "branch"}').read_only
    assert facts_of(registry, "Git", '{"command": "branch", "name": "x"}').unknown_writes
    assert facts_of(registry, "Git", '{"command": "commit", "message": "m"}').unknown_writes


def test_the_subagent_tool_reads_for_explore_and_writes_for_coder() -> None:
    async def spawn(task: str, kind: str, files: list[str]) -> tuple[str, dict[str, int]]:
        return "", {}

    kinds = {"explore": ToolFacts(reads=True, network=True), "coder": ToolFacts(reads=True, writes=True, commands=True)}
    registry = ToolRegistry([AgentTool(spawn, kinds)])
    assert facts_of(registry, "Agent", '{"task": "t", "kind": "explore"}').read_only
    coder = facts_of(registry, "Agent", '{"task": "t", "kind": "coder"}')
    assert coder.unknown_writes and coder.commands
    declared = registry.get("Agent").declared()  # type: ignore[union-attr]
    assert declared.writes and declared.network and declared.paths is None


def test_a_union_of_nothing_is_nothing_and_anything_is_not_read_only() -> None:
    assert ToolFacts.union([]) == ToolFacts() and not ANYTHING.read_only
    assert ToolFacts.union([READS, ToolFacts(network=True)]) == ToolFacts(reads=True, network=True)
    assert ToolFacts.union([READS, ToolFacts(writes=True, paths=("a",))]).unknown_writes


def test_mcp_tools_follow_their_servers_annotations_and_assume_the_worst_without() -> None:
    read_only = mcp_types.ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    additive = mcp_types.ToolAnnotations(readOnlyHint=False, destructiveHint=False)
    assert mcp_facts(read_only, False) == ToolFacts(reads=True)
    assert mcp_facts(additive, False).unknown_writes and mcp_facts(additive, False).network
    assert mcp_facts(None, False).unknown_writes and mcp_facts(None, False).network
    assert mcp_facts(None, True).read_only  # the user's read_only list wins


def test_an_mcp_tool_carries_the_facts_of_its_annotations() -> None:
    listed = mcp_types.Tool(name="echo", inputSchema={"type": "object"}, annotations=mcp_types.ToolAnnotations(
        readOnlyHint=True))  # fmt: skip
    tool = McpTool(None, "srv", ServerConfig(command="x"), listed, "mcp__srv__echo", None)  # type: ignore[arg-type]
    assert ToolRegistry([tool]).prepare("1", "mcp__srv__echo", '{"text": "hi"}').facts.read_only
    assert tool.schema()["function"]["parameters"]["type"] == "object"


def test_fetch_notes_the_urls_the_user_typed_per_agent_context(tmp_path: Path) -> None:
    fetch = FetchURL(approver=None, allowed_hosts=[], allowed_private_hosts=[])  # type: ignore[arg-type]
    ctx = ToolContext(workspace=Workspace(tmp_path))
    ToolRegistry([fetch]).observe_prompt("read https://docs.example/a.html, then (https://b.example/x).", ctx)
    assert ctx.prompt_urls == {"https://docs.example/a.html", "https://b.example/x"}
    assert fetch.declared().network and fetch.declared().read_only
    assert prompt_urls("no links here") == set()


def test_the_guard_counts_repeats_with_the_same_result_and_a_change_starts_over() -> None:
    guard = LoopGuard(remind_at=2, stop_at=3)
    assert guard.record("k", "same") == 1 and guard.reminder(1) is None
    assert guard.record("k", "same") == 2 and "2 times" in (guard.reminder(2) or "")
    assert guard.record("k", "different") == 1
    assert guard.record("other", "different") == 1
    assert [guard.record("other", "different") for _ in range(2)] == [2, 3] and guard.should_stop(3)


def test_events_serialise_with_their_type_and_deltas_are_not_logged() -> None:
    assert ToolCall("1", "ReadFile", "{}").to_dict() == {"type": "tool_call", "id": "1", "name": "ReadFile",
                                                         "arguments": "{}"}  # fmt: skip
    assert not TextDelta("x").logged and ToolCall.logged
    finished: dict[str, Any] = Finished("done", 0, "t", 1).to_dict()
    assert finished["type"] == "finished" and finished["usage"] == {}
