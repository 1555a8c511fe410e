"""Late tools declared in a system message (kimi_cli.extensions.mcp.in_messages): the top-level block stays as
first sent, each arrival is declared once before the next request, and a compaction that dropped a
declaration has its tools declared again."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from kimi_cli.extensions.mcp.in_messages import ToolsInMessages
from kimi_cli.tools.base import NOTHING, Tool, ToolContext, ToolResult
from kimi_cli.tools.registry import ToolRegistry


class NoArgs(BaseModel):
    pass


def named(name: str) -> Tool[Any]:
    class Made(Tool[NoArgs]):
        Params = NoArgs
        facts = NOTHING
        description = "d"

        async def run(self, params: NoArgs, ctx: ToolContext) -> ToolResult:
            return ToolResult(name)

    made = Made()
    made.name = name  # type: ignore[misc]
    return made


def names(message: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in message["tools"]]


def test_late_tools_leave_the_block_alone_and_are_declared_once_then_again_after_a_compaction() -> None:
    registry = ToolRegistry([named("ReadFile")])
    block = registry.schemas()
    history: list[dict[str, Any]] = [{"role": "system", "content": "prefix"}]
    declare = ToolsInMessages(registry, lambda: history)
    assert asyncio.run(declare()) == []
    registry.append([named("mcp__a__x")])
    registry.append([named("mcp__a__y")])
    assert registry.schemas() is block and "mcp__a__x" in registry  # callable, not in the block
    (first,) = asyncio.run(declare())
    assert set(first) == {"role", "tools"} and names(first) == ["mcp__a__x", "mcp__a__y"]
    history.append(first)
    assert asyncio.run(declare()) == []  # declared once
    registry.append([named("mcp__b__z")])
    (second,) = asyncio.run(declare())
    assert names(second) == ["mcp__b__z"]
    history[:] = [history[0]]  # a compaction kept neither declaration
    (again,) = asyncio.run(declare())
    assert names(again) == ["mcp__a__x", "mcp__a__y", "mcp__b__z"]


def test_without_the_seam_late_tools_join_the_end_of_the_block() -> None:
    registry = ToolRegistry([named("ReadFile")])
    registry.schemas()
    registry.append([named("mcp__a__x")])
    assert [s["function"]["name"] for s in registry.schemas()] == ["ReadFile", "mcp__a__x"]
