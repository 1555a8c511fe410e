"""Over the model's tool limit: MCP tools are deferred behind SearchTools and join the end of the tools block
when found or called by name; no request ever declares more than the limit."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kimi_cli.extensions.mcp.deferred import DeferredTools, SearchTools, defer_over_limit
from kimi_cli.tools.base import NOTHING, Tool, ToolContext, ToolResult
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.workspace import Workspace

from scripted_server import ScriptedModelServer
from support import TESTS_DIR, run_kimi, tool_call, tool_results

FIXTURE = TESTS_DIR / "mcp_fixture_server.py"


class NoArgs(BaseModel):
    pass


def named_tool(name: str, description: str) -> Tool[Any]:
    class Made(Tool[NoArgs]):
        Params = NoArgs
        facts = NOTHING

        async def run(self, params: NoArgs, ctx: ToolContext) -> ToolResult:
            return ToolResult(f"ran {self.name}")

    made = Made()
    made.name = name  # type: ignore[misc]
    made.description = description  # type: ignore[misc]
    return made


def test_nothing_is_deferred_when_everything_fits() -> None:
    tools = [named_tool(f"mcp__s__t{i}", "x") for i in range(10)]
    declared, pool = defer_over_limit(20, tools, 128)
    assert declared == tools and not pool.pool
    declared, pool = defer_over_limit(20, tools * 11, 128)
    assert declared == [] and pool is not None and len(pool.pool) == 10


def test_search_ranks_by_name_then_description_and_joins_only_while_there_is_room(tmp_path: Path) -> None:
    pool_tools = [named_tool("mcp__cloud__list_buckets", "List storage buckets"),
                  named_tool("mcp__cloud__delete_bucket", "Delete one bucket"),
                  named_tool("mcp__cloud__get_invoice", "Read an invoice; mentions buckets of costs"),
                  named_tool("mcp__cloud__start_vm", "Start a virtual machine")]  # fmt: skip
    deferred = DeferredTools(pool_tools, max_tools=5)
    registry = ToolRegistry([named_tool("ReadFile", "r"), named_tool("Shell", "s")])
    registry.schemas()
    deferred.attach(registry)
    search = SearchTools(deferred)
    registry.append([search])
    assert [t.name for t in deferred.search("bucket")] == [
        "mcp__cloud__delete_bucket", "mcp__cloud__list_buckets", "mcp__cloud__get_invoice"]  # fmt: skip
    ctx = ToolContext(workspace=Workspace(tmp_path))
    out = asyncio.run(search.run(search.Params(query="bucket", limit=3), ctx)).output
    # room for two more (limit 5, three declared): two join at the end, the third is told it cannot
    assert registry.names == ["ReadFile", "Shell", "SearchTools", "mcp__cloud__delete_bucket",
                              "mcp__cloud__list_buckets"]  # fmt: skip
    assert "mcp__cloud__get_invoice (the tool list is full: call it by this name)" in out
    assert "mcp__cloud__delete_bucket (now available): Delete one bucket" in out
    assert len(registry.schemas()) == 5
    assert "no deferred tool matches" in asyncio.run(search.run(search.Params(query="kubernetes"), ctx)).output


def test_a_call_by_full_name_brings_the_tool_in(tmp_path: Path) -> None:
    deferred = DeferredTools([named_tool("mcp__s__alpha", "a"), named_tool("mcp__s__beta", "b")], max_tools=10)
    registry = ToolRegistry([named_tool("ReadFile", "r")])
    before = registry.schemas()
    deferred.attach(registry)
    asyncio.run(registry.bring(["mcp__s__beta", "NoSuchTool"]))
    assert registry.names == ["ReadFile", "mcp__s__beta"] and "mcp__s__beta" not in deferred.pool
    assert registry.schemas()[: len(before)] == before  # what was sent before is unchanged, in place
    result = asyncio.run(registry.call("mcp__s__beta", "{}", ToolContext(workspace=Workspace(tmp_path))))
    assert result.output == "ran mcp__s__beta"


def test_a_full_block_still_runs_a_deferred_tool_called_by_name(tmp_path: Path) -> None:
    deferred = DeferredTools([named_tool("mcp__s__alpha", "a"), named_tool("mcp__s__beta", "b")], max_tools=2)
    registry = ToolRegistry([named_tool("ReadFile", "r"), named_tool("Shell", "s")])
    before = registry.schemas()
    deferred.attach(registry)
    ctx = ToolContext(workspace=Workspace(tmp_path))
    asyncio.run(registry.bring(["mcp__s__alpha"]))
    assert registry.names == ["ReadFile", "Shell"] and registry.schemas() == before  # no room: not declared
    assert asyncio.run(registry.call("mcp__s__alpha", "{}", ctx)).output == "ran mcp__s__alpha"  # yet it runs
    unknown = asyncio.run(registry.call("mcp__s__gamma", "{}", ctx))
    assert unknown.is_error and "unknown tool 'mcp__s__gamma'" in unknown.output


def test_150_mcp_tools_stay_within_the_limit_and_a_deferred_tool_is_found_and_called(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path, home: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"many": {"command": sys.executable,
                                                          "args": [str(FIXTURE), "many", "150"]}}}))  # fmt: skip
    home_config = home / ".kimi" / "config.toml"
    home_config.write_text(home_config.read_text() + '\n[approval]\nallow = ["mcp__many__*"]\n')
    server.add(
        {"tool_calls": [tool_call("mcp__many__t137", {"query": "by name"}, "c0")]},
        {"tool_calls": [tool_call("SearchTools", {"query": "kubernetes shard 42", "limit": 3}, "s1")]},
        {"tool_calls": [tool_call("mcp__many__t042", {"query": "pods"}, "c1")]},
        {"text": "done"},
    )
    # a model without messages[].tools: the fallback, the end of the top-level block (K3: test_mcp_first_request)
    proc = run_kimi(["-p", "check the cluster", "--mcp-config", str(config), "--output-format", "stream-json"],
                    repo, {**env, "KIMI_MODEL": "kimi-k2.6"}, server)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    names = [[t["function"]["name"] for t in request["tools"]] for request in server.requests]
    assert len(names) == 4 and all(len(n) <= 128 for n in names), [len(n) for n in names]
    first = names[0]
    assert "ReadFile" in first and "Shell" in first  # built-ins always stay
    assert not any(n.startswith("mcp__many__") for n in first)  # (the server may still be starting then)
    # called by its full name before any search: it runs, and joins the end of the block
    assert json.loads(tool_results(server, 1)[-1]) == {"tool": "t137", "arguments": {"query": "by name"}}
    assert "SearchTools" in names[1] and names[1][-1] == "mcp__many__t137"
    (found,) = tool_results(server, 2)[-1:]
    assert "mcp__many__t042 (now available): Tool 42: reads the kubernetes records, shard 42" in found
    assert json.loads(tool_results(server, 3)[-1]) == {"tool": "t042", "arguments": {"query": "pods"}}
    # every addition went at the end: each request's tools begin with the previous request's, unchanged
    for before, after in zip(server.requests, server.requests[1:], strict=False):
        assert after["tools"][: len(before["tools"])] == before["tools"]
    assert "mcp__many__t042" in names[2][len(names[1]) :] or "mcp__many__t042" in names[3][len(names[1]) :]
    notices = [json.loads(line)["message"] for line in proc.stdout.splitlines() if '"notice"' in line]
    assert any("deferred" in n and "SearchTools" in n for n in notices)  # the user is told, in either timing
