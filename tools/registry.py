"""ToolRegistry: the schemas sent to the model, and a call path where every failure becomes a result.

A call from the model is parsed and validated once, into a `PreparedCall`; the loop, batching, the loop
guard, checkpoints and change notes all read that, never the raw JSON again.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from kimi_cli.tools.base import NOTHING, Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.errors import ToolError

READ_GROUP = "read"


@dataclass
class PreparedCall:
    """One call as the model made it, parsed once: the tool, its validated params, and what it may do.
    A call that cannot run (unknown tool, broken JSON, bad arguments) carries the error it answers with."""

    id: str
    name: str
    arguments: str  # the raw JSON text, kept for the history and the events
    key: str  # canonical name + arguments: identical calls have equal keys
    tool: Tool[Any] | None = None
    params: BaseModel | None = None
    error: str | None = None
    facts: ToolFacts = NOTHING
    group: str | None = READ_GROUP  # calls of one group in a row run together; None: alone
    limit: int = 8  # how many of this group run at once
    input: Any = None  # the decoded arguments (hooks are given these; None when they are not JSON)
    hook_allowed: str = ""  # why a PreToolUse hook let it run without kimi's question (agent.gate)


def _canonical(name: str, raw: str) -> tuple[str, Any, str | None]:
    """(key, decoded arguments, JSON error message) for raw arguments, decoded within jsonsafe's bounds
    (1,000 nested arrays must be an answer the model can read, not a RecursionError)."""
    from kimi_cli.util.jsonsafe import loads

    try:
        args = loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return f"{name}\x00{raw.strip()}", None, f"{exc.msg} at position {exc.pos}"
    except ValueError as exc:  # too deep, too long, NaN
        return f"{name}\x00{raw.strip()}", None, str(exc)
    return f"{name}\x00{json.dumps(args, sort_keys=True, separators=(',', ':'))}", args, None


class ToolRegistry:
    """The tools of a session, by name."""

    def __init__(self, tools: Iterable[Tool[Any]]) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for tool in tools:
            self._tools[tool.name] = tool
        self._schemas: list[dict[str, Any]] | None = None
        # A source of tools that arrive later (MCP servers still starting): asked, with the names the model
        # called that are not here, before those calls are prepared; it appends what it brings.
        self.late: Callable[[list[str]], Awaitable[object]] | None = None
        # Tools that may be called by name without being declared (deferred MCP tools once the block is
        # full): looked up only for a name that is not in the block.
        self.undeclared: Callable[[str], Tool[Any] | None] | None = None
        # Where the model takes tools declared inside the conversation (messages[].tools, the K3 family): the
        # schemas of tools appended after the block was first sent go here instead, and the top-level block
        # stays as it was sent (kimi_cli.extensions.mcp.in_messages puts them in a system message).
        self.declare_later: Callable[[list[dict[str, Any]]], None] | None = None

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    @property
    def tools(self) -> list[Tool[Any]]:
        return list(self._tools.values())

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """Built once: the schemas are part of the cached prompt prefix and must not change mid-session,
        except by `append`, which only adds at the end."""
        if self._schemas is None:
            self._schemas = [tool.schema() for tool in self._tools.values()]
        return self._schemas

    def append(self, tools: Iterable[Tool[Any]]) -> list[str]:
        """Add tools at the END of the tools block (an MCP server that became ready late): what was sent
        before stays byte-identical and in place, so the cached prompt prefix survives. A name already here
        is skipped. The schema list is replaced, not mutated (the wire caches its encoding by identity).
        Returns the names added."""
        added: list[str] = []
        for tool in tools:
            if tool.name not in self._tools:
                self._tools[tool.name] = tool
                added.append(tool.name)
        if added and self._schemas is not None:
            schemas = [self._tools[name].schema() for name in added]
            if self.declare_later is not None:
                self.declare_later(schemas)
            else:
                self._schemas = self._schemas + schemas
        return added

    async def bring(self, names: Iterable[str]) -> None:
        """Before calls are prepared: let `late` bring tools the model named that are not here yet."""
        missing = [n for n in names if n not in self._tools]
        if missing and self.late is not None:
            await self.late(missing)

    def observe_prompt(self, text: str, ctx: ToolContext) -> None:
        """Hand the user's own words to every tool that wants them (see Tool.observe_prompt)."""
        for tool in self._tools.values():
            tool.observe_prompt(text, ctx)

    def prepare(self, call_id: str, name: str, raw_arguments: str) -> PreparedCall:
        """Parse and validate one call. A bad call is answered without running, so it counts as a read."""
        key, args, json_error = _canonical(name, raw_arguments)
        return self._prepared(PreparedCall(call_id, name, raw_arguments, key), args, json_error)

    def prepare_input(self, call_id: str, name: str, args: Any) -> PreparedCall:
        """Validate a call from arguments already decoded (a hook's updatedInput): no JSON round trip."""
        key = f"{name}\x00{json.dumps(args, sort_keys=True, separators=(',', ':'))}"
        return self._prepared(PreparedCall(call_id, name, json.dumps(args), key), args, None)

    def _prepared(self, call: PreparedCall, args: Any, json_error: str | None) -> PreparedCall:
        name, raw_arguments = call.name, call.arguments
        call.input = args if json_error is None else raw_arguments
        tool = self._tools.get(name)
        if tool is None and self.undeclared is not None:
            tool = self.undeclared(name)
        if tool is None:
            call.error = f"error: unknown tool '{name}'. Available tools: {', '.join(self._tools)}."
            return call
        call.tool = tool
        if getattr(tool, "echo_arguments", False):  # a provider's built-in function: its arguments are the answer
            call.facts = tool.declared()
            return self._grouped(call)
        if json_error is not None:
            call.error = (
                f"error: the arguments for {name} are not valid JSON ({json_error}): {raw_arguments[:200]!r}. "
                "Send a single JSON object."
            )
            return call
        if not isinstance(args, dict):
            call.error = f"error: the arguments for {name} must be a JSON object"
            return call
        try:
            call.params = tool.Params.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}" for e in exc.errors()
            )
            call.error = f"error: invalid arguments for {name}: {problems}"
            return call
        call.facts = tool.facts_for(call.params)
        return self._grouped(call)

    @staticmethod
    def _grouped(call: PreparedCall) -> PreparedCall:
        assert call.tool is not None
        if call.tool.concurrent_group:
            call.group = call.tool.concurrent_group
        else:
            call.group = READ_GROUP if call.facts.read_only else None
        call.limit = call.tool.max_concurrent
        return call

    async def run(self, call: PreparedCall, ctx: ToolContext) -> ToolResult:
        """Run a prepared call. Tool errors and tool bugs come back as error results, never as exceptions."""
        if call.error is not None or call.tool is None:
            return ToolResult(call.error or f"error: unknown tool '{call.name}'", is_error=True)
        if call.params is None:  # echo_arguments: the raw arguments are the answer
            return ToolResult(call.arguments, display={"kind": "builtin", "name": call.name})
        if call.hook_allowed:  # this call's own context says so to its approver, no other call's
            ctx = dataclasses.replace(ctx, hook_allowed=call.hook_allowed)
        try:
            return await call.tool.run(call.params, ctx)
        except ToolError as exc:
            return ToolResult(f"error: {exc}", is_error=True)
        except Exception as exc:  # a tool bug must not end the session
            return ToolResult(f"error: {call.name} failed unexpectedly: {type(exc).__name__}: {exc}", is_error=True)

    async def call(self, name: str, raw_arguments: str, ctx: ToolContext, call_id: str = "") -> ToolResult:
        """Prepare and run one call (tests, and callers outside the loop)."""
        return await self.run(self.prepare(call_id, name, raw_arguments), ctx)
