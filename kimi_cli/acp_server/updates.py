"""Agent events to ACP `session/update` notifications: message and thought chunks, tool calls, the plan."""

from __future__ import annotations

import json
from typing import Any

from kimi_cli.agent.events import Event, ReasoningDelta, TextDelta, ToolCall, ToolOutput

KINDS = {
    "ReadFile": "read", "ReadMediaFile": "read", "Glob": "search", "Grep": "search", "WriteFile": "edit",
    "StrReplaceFile": "edit", "Shell": "execute", "Git": "execute", "FetchURL": "fetch", "$web_search": "fetch",
    "SetTodoList": "think", "Agent": "think", "TaskOutput": "read", "TaskStop": "execute",
}  # fmt: skip


def _args(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def title_for(name: str, args: dict[str, Any]) -> str:
    for key in ("command", "path", "pattern", "url", "task"):
        if isinstance(args.get(key), str):
            return f"{name}: {args[key][:120]}"
    return name


class EditTexts:
    """Old text of files the agent is about to edit (read when the call starts), for ACP's diff blocks."""

    LIMIT = 200_000

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.before: dict[str, tuple[str, str | None]] = {}

    def on_call(self, event: ToolCall) -> None:
        if event.name in ("WriteFile", "StrReplaceFile"):
            path = _args(event.arguments).get("path")
            if isinstance(path, str):
                self.before[event.id] = (path, _read(_abs(self.cwd, path), self.LIMIT))

    def diff(self, event: ToolOutput) -> tuple[str, str | None, str] | None:
        entry = self.before.pop(event.id, None)
        if entry is None or event.is_error:
            return None
        path, old = entry
        new = _read(_abs(self.cwd, path), self.LIMIT)
        return (_abs(self.cwd, path), old, new) if new is not None else None


def _read(path: str, limit: int) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(limit + 1)
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) <= limit else None


def to_updates(event: Event, cwd: str, edits: EditTexts | None = None) -> list[Any]:
    """The ACP updates for an agent event (none for events editors do not show)."""
    if edits is not None and isinstance(event, ToolCall):
        edits.on_call(event)
    if edits is not None and isinstance(event, ToolOutput):
        found = edits.diff(event)
        if found is not None:
            import acp

            path, old, new = found
            content = [acp.tool_diff_content(path, new, old)]
            return [acp.update_tool_call(event.id, status="completed", content=content, raw_output=event.output)]
    update = _to_update(event, cwd)
    if isinstance(event, ToolOutput) and (event.display or {}).get("kind") == "todos":
        import acp

        done = acp.update_tool_call(event.id, status="completed")
        return [done, update]
    return [update] if update is not None else []


def _to_update(event: Event, cwd: str) -> Any | None:
    import acp

    if isinstance(event, TextDelta):
        return acp.update_agent_message_text(event.text)
    if isinstance(event, ReasoningDelta):
        return acp.update_agent_thought_text(event.text)
    if isinstance(event, ToolCall):
        args = _args(event.arguments)
        locations = []
        if isinstance(args.get("path"), str):
            from acp.schema import ToolCallLocation

            locations.append(ToolCallLocation(path=_abs(cwd, args["path"]), line=args.get("line_offset")))
        return acp.start_tool_call(
            event.id, title_for(event.name, args), kind=KINDS.get(event.name, "other"),  # type: ignore[arg-type]
            status="in_progress", locations=locations or None, raw_input=args,
        )  # fmt: skip
    if isinstance(event, ToolOutput):
        return _tool_result(event, cwd)
    return None


def _tool_result(event: ToolOutput, cwd: str) -> Any:
    import acp

    display = event.display or {}
    content: list[Any] = [acp.tool_content(acp.text_block(event.output[:20000]))]
    if display.get("kind") == "todos":
        return acp.update_plan(
            acp.plan_entry(t["title"], status=_plan_status(t.get("status", "pending")))  # type: ignore[arg-type]
            for t in display.get("todos", [])
        )
    status = "failed" if event.is_error else "completed"
    return acp.update_tool_call(event.id, status=status, content=content, raw_output=event.output[:20000])  # type: ignore[arg-type]


def _plan_status(status: str) -> str:
    return {"done": "completed", "in_progress": "in_progress"}.get(status, "pending")


def _abs(cwd: str, path: str) -> str:
    import os

    return path if os.path.isabs(path) else os.path.join(cwd, path)
