"""Deferred MCP tools: when MCP servers would push a request past the model's tool limit (128 on Kimi's
platform), their tools wait in a pool instead of the tools block. That holds for servers ready at the start
and for servers that become ready later (their tools come through ToolRegistry.admit).

The request then carries `SearchTools` (query -> names and one-line descriptions). The tools a search
finds join the tools block, and so does a deferred tool the model calls by its full name: always at the
END of the block (ToolRegistry.append), so everything sent before stays byte-identical and the prompt
cache keeps it. Built-in tools always stay. The block never grows past the limit: once it is full a
search still answers, and a pool tool called by its full name still runs; it is just not declared.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from kimi_cli.tools.base import NOTHING, Tool, ToolContext, ToolResult

SEARCH_NAME = "SearchTools"
DEFAULT_RESULTS = 5
WORD = re.compile(r"[a-z0-9]+")


def one_line(text: str, limit: int = 120) -> str:
    first = " ".join((text or "").strip().splitlines()[:1])
    return first if len(first) <= limit else first[: limit - 1] + "…"


def _words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def _score(word: str, name: str, name_words: set[str], desc_words: set[str]) -> int:
    """3: a word of the name; 2: part of the name; 1: starts a word of the description (bucket ~ buckets)."""
    if word in name_words:
        return 3
    if word in name:
        return 2
    return 1 if any(d.startswith(word) for d in desc_words) else 0


class DeferredTools:
    """The pool of tools not in the block yet, and the room the block has left."""

    def __init__(self, tools: Iterable[Tool[Any]], max_tools: int) -> None:
        self.pool: dict[str, Tool[Any]] = {t.name: t for t in tools}
        self.max_tools = max_tools
        self.registry: Any = None  # the session's ToolRegistry, once built (attach)
        self.searcher: SearchTools | None = None  # declared once anything is deferred
        self._later: Callable[[list[str]], Awaitable[object]] | None = None
        self.notify: Callable[[str], None] = lambda _message: None

    def search_tool(self) -> list[Tool[Any]]:
        """[SearchTools] when tools are deferred at the start, else []: to declare beside the built-ins."""
        if self.pool and self.searcher is None:
            self.searcher = SearchTools(self)
        return [self.searcher] if self.searcher is not None else []

    def attach(self, registry: Any, notify: Callable[[str], None] | None = None) -> None:
        """Join `registry`: late tools are admitted through here, and a call by the full name of a pool tool
        brings it in (before any other late source is asked). `notify` tells the user when late tools wait."""
        self.registry = registry
        self.notify = notify or (lambda _message: None)
        self._later = registry.late
        registry.late = self.bring
        registry.admit = self.admit
        registry.undeclared = self.pool.get  # the block is full: a call by full name still runs

    def admit(self, tools: Iterable[Tool[Any]]) -> list[str]:
        """Tools that arrive later (a server ready after the start): at the end of the block while they all
        fit, else into the pool, with SearchTools joining the end once. The names added to the block."""
        tools = [t for t in tools if t.name not in self.registry]
        if not self.pool and len(self.registry.names) + len(tools) + 1 <= self.max_tools:  # + room for SearchTools
            added: list[str] = self.registry.append(tools)
            return added
        self.pool.update((t.name, t) for t in tools)
        self.notify(
            f"{len(tools)} tools of MCP servers that became ready would take each request past the limit of "
            f"{self.max_tools} tools: they are deferred, and SearchTools finds them"
        )
        if self.searcher is None and len(self.registry.names) < self.max_tools:
            self.searcher = SearchTools(self)
            return list(self.registry.append([self.searcher]))
        return []

    @property
    def room(self) -> int:
        return max(0, self.max_tools - len(self.registry.names)) if self.registry is not None else 0

    def search(self, query: str, limit: int = DEFAULT_RESULTS) -> list[Tool[Any]]:
        """Pool tools ranked by how well their name and description match the query's words."""
        wanted = _words(query)
        exact = query.strip()
        scored: list[tuple[int, str, Tool[Any]]] = []
        for name, tool in self.pool.items():
            if name == exact:
                scored.append((1_000, name, tool))
                continue
            name_words, desc_words = _words(name.replace("__", " ")), _words(str(tool.description))
            score = sum(_score(w, name.lower(), name_words, desc_words) for w in wanted)
            if score:
                scored.append((score, name, tool))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [tool for _score, _name, tool in scored[:limit]]

    def join(self, names: Iterable[str]) -> list[str]:
        """Move pool tools into the block (at its end) while there is room; the names that joined."""
        if self.registry is None:
            return []
        chosen = [self.pool[n] for n in dict.fromkeys(names) if n in self.pool][: self.room]
        joined: list[str] = self.registry.append(chosen)
        for name in joined:
            self.pool.pop(name, None)
        return joined

    async def bring(self, names: list[str]) -> None:
        """ToolRegistry.late: a call by the full name of a pool tool brings it in; other names go on to
        whatever late source was there before (MCP servers still starting)."""
        self.join(names)
        rest = [n for n in names if self.registry is None or n not in self.registry]
        if rest and self._later is not None:
            await self._later(rest)  # a server that was still starting may have put it in the pool meanwhile
            self.join(rest)


class SearchToolsParams(BaseModel):
    query: str = Field(description="Words to look for in the names and descriptions of the deferred tools.")
    limit: int = Field(default=DEFAULT_RESULTS, ge=1, le=20, description="How many tools to return (1-20).")


class SearchTools(Tool[SearchToolsParams]):
    name = SEARCH_NAME
    Params = SearchToolsParams
    facts = NOTHING  # it changes only which tools are declared

    def __init__(self, deferred: DeferredTools) -> None:
        self.deferred = deferred
        servers = sorted({name.split("__")[1] for name in deferred.pool if name.count("__") >= 2})
        self.description = (  # type: ignore[misc]
            f"Find MCP tools that are not in your tool list yet ({len(deferred.pool)} tools of "
            f"{', '.join(servers) or 'MCP servers'}). Returns matching tool names with one-line descriptions; "
            "the tools found join your tool list, so you can call them next. Calling a tool by its full name "
            "(mcp__server__tool) also works."
        )

    async def run(self, params: SearchToolsParams, ctx: ToolContext) -> ToolResult:
        found = self.deferred.search(params.query, params.limit)
        already = [n for n in self.deferred.registry.names if n.startswith("mcp__")] if self.deferred.registry else []
        if not found:
            hint = f" Tools already in your list: {', '.join(already[:20])}." if already else ""
            return ToolResult(f"no deferred tool matches {params.query!r}.{hint}")
        joined = set(self.deferred.join(t.name for t in found))
        lines = []
        for tool in found:
            state = "now available" if tool.name in joined else "the tool list is full: call it by this name"
            lines.append(f"{tool.name} ({state}): {one_line(str(tool.description))}")
        return ToolResult("\n".join(lines))


def defer_over_limit(
    kept_count: int, mcp: Sequence[Tool[Any]], max_tools: int
) -> tuple[list[Tool[Any]], DeferredTools]:
    """(MCP tools to declare, the pool). `kept_count`: the tools that always stay (built-ins, the Agent
    tool). When everything fits, nothing is deferred (the pool starts empty, for servers ready later);
    otherwise every MCP tool waits in the pool and SearchTools takes one place in the block."""
    if kept_count + 1 + len(mcp) <= max_tools:
        return list(mcp), DeferredTools([], max_tools)
    return [], DeferredTools(mcp, max_tools)
