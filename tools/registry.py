"""ToolRegistry: the schemas sent to the model, and a call path where every failure becomes a result."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from kimi_cli.tools.base import Tool, ToolContext, ToolError, ToolResult


class ToolRegistry:
    """The tools of a session, by name."""

    def __init__(self, tools: Iterable[Tool[Any]]) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for tool in tools:
            self._tools[tool.name] = tool
        self._schemas: list[dict[str, Any]] | None = None

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool[Any] | None:
        return self._tools.get(name)

    def _params(self, name: str, raw_arguments: str) -> tuple[Tool[Any], Any] | None:
        tool = self._tools.get(name)
        if tool is None:
            return None
        try:
            args = json.loads(raw_arguments) if raw_arguments.strip() else {}
            return tool, tool.Params.model_validate(args)
        except (json.JSONDecodeError, ValidationError, TypeError):
            return None

    def is_read_only(self, name: str, raw_arguments: str) -> bool:
        """Whether this call only reads (a bad call is answered without running, so it counts as a read)."""
        found = self._params(name, raw_arguments)
        if found is None:
            return True
        tool, params = found
        return tool.is_read_only(params)

    def batch_key(self, name: str, raw_arguments: str) -> str | None:
        """Calls with the same key, one after another, may run together: reads, or subagents."""
        found = self._params(name, raw_arguments)
        if found is not None and found[0].concurrent_group:
            return found[0].concurrent_group
        return "read" if self.is_read_only(name, raw_arguments) else None

    def changes_files(self, name: str, raw_arguments: str = "") -> bool:
        found = self._params(name, raw_arguments)
        if found is None:
            return False
        tool, params = found
        return tool.changes_files and not tool.is_read_only(params)

    @property
    def tools(self) -> list[Tool[Any]]:
        return list(self._tools.values())

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """Built once: the schemas are part of the cached prompt prefix and must not change mid-session."""
        if self._schemas is None:
            self._schemas = [tool.schema() for tool in self._tools.values()]
        return self._schemas

    async def call(self, name: str, raw_arguments: str, ctx: ToolContext) -> ToolResult:
        """Run one call from the model. Unknown tools, broken JSON and bad args come back as errors."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools)
            return ToolResult(f"error: unknown tool '{name}'. Available tools: {known}.", is_error=True)
        if getattr(tool, "echo_arguments", False):  # a provider's built-in function: its arguments are the answer
            return ToolResult(raw_arguments, display={"kind": "builtin", "name": name})
        try:
            args = json.loads(raw_arguments) if raw_arguments.strip() else {}
        except json.JSONDecodeError as exc:
            snippet = raw_arguments[:200]
            return ToolResult(
                f"error: the arguments for {name} are not valid JSON ({exc.msg} at position {exc.pos}): "
                f"{snippet!r}. Send a single JSON object.",
                is_error=True,
            )
        if not isinstance(args, dict):
            return ToolResult(f"error: the arguments for {name} must be a JSON object", is_error=True)
        try:
            params = tool.Params.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}" for e in exc.errors()
            )
            return ToolResult(f"error: invalid arguments for {name}: {problems}", is_error=True)
        try:
            return await tool.run(params, ctx)
        except ToolError as exc:
            return ToolResult(f"error: {exc}", is_error=True)
        except Exception as exc:  # a tool bug must not end the session
            return ToolResult(f"error: {name} failed unexpectedly: {type(exc).__name__}: {exc}", is_error=True)
