"""Agent events to ACP `session/update` notifications: message and thought chunks, tool calls, the plan."""

from __future__ import annotations

from typing import Any

from kimi_cli.agent.events import Event, ReasoningDelta, TextDelta, ToolCall, ToolOutput
from kimi_cli.util import jsonsafe

KINDS = {
    "ReadFile": "read", "ReadMediaFile": "read", "Glob": "search", "Grep": "search", "WriteFile": "edit",
    "StrReplaceFile": "edit", "Shell": "execute", "Git": "execute", "FetchURL": "fetch", "$web_search": "fetch",
    "SetTodoList": "think", "Agent": "think", "TaskOutput": "read", "TaskStop": "execute",
}  # fmt: skip


MAX_DEPTH = 64  # tool arguments nested deeper are not shown (the SDK cannot serialise ~900 levels)


def _args(arguments: str) -> dict[str, Any]:
    try:  # bounded before anything is decoded: a hostile model's 100,000 nested arrays
        value = jsonsafe.loads(arguments, max_depth=MAX_DEPTH)
    except (ValueError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def title_for(name: str, args: dict[str, Any]) -> str:
    """A tool-call card's title: the whole argument written out (blank runs counted, controls escaped), and past
    the title limit a mark that says how much is left out; the exact arguments travel as raw_input."""
    from kimi_cli.frontends.questions import TITLE_LIMIT, show

    for key in ("command", "path", "pattern", "url", "task"):
        if isinstance(args.get(key), str):
            return show(f"{name}: {args[key]}", one_line=True, limit=TITLE_LIMIT).plain
    return name


def edit_diff(event: ToolOutput, cwd: str) -> tuple[str, str | None, str] | None:
    """(path, old, new) of a successful edit, from the texts the tool itself read and wrote through the
    no-follow reader (tools.write_file.diff_display). Nothing is read here: a path the model names may be a
    FIFO, /dev/stdin or a link a background command just swapped in, and a second read would show what is
    there now, not what was written."""
    display = event.display or {}
    if event.is_error or display.get("kind") != "diff" or not isinstance(display.get("new"), str):
        return None
    old = display.get("old")
    return _abs(cwd, str(display.get("path", ""))), old if isinstance(old, str) else None, display["new"]


def to_updates(event: Event, cwd: str) -> list[Any]:
    """The ACP updates for an agent event (none for events editors do not show)."""
    if isinstance(event, ToolOutput):
        found = edit_diff(event, cwd)
        if found is not None:
            import acp

            path, old, new = found
            content: list[Any] = [acp.tool_diff_content(path, new, old)]
            notes = (event.display or {}).get("diagnostics")  # what the language servers found after the edit
            if isinstance(notes, list) and notes:
                content.append(acp.tool_content(acp.text_block("\n".join(map(str, notes))[:20000])))
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
