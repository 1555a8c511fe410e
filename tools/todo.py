"""SetTodoList: the agent's plan, kept in the session and shown by the UI."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kimi_cli.tools.base import NOTHING, Tool, ToolContext, ToolResult

MARKS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


class Todo(BaseModel):
    title: str = Field(description="The step.")
    status: Literal["pending", "in_progress", "done"] = Field("pending", description="Progress.")


class SetTodoListParams(BaseModel):
    todos: list[Todo] = Field(description="The whole list.")


class SetTodoList(Tool[SetTodoListParams]):
    name = "SetTodoList"
    description = (
        "Set your plan as a todo list the user sees; each call replaces the whole list. For work of three or more "
        "steps (skip it for quick tasks); keep one item in_progress and mark items done as you go. "
        'Example: {"todos": [{"title": "Reproduce the bug", "status": "done"}, {"title": "Fix parse()", '
        '"status": "in_progress"}]}'
    )
    Params = SetTodoListParams
    facts = NOTHING  # the plan lives in the conversation

    async def run(self, params: SetTodoListParams, ctx: ToolContext) -> ToolResult:
        ctx.todos[:] = [t.model_dump() for t in params.todos]
        lines = [f"{MARKS[t.status]} {t.title}" for t in params.todos] or ["(empty list)"]
        return ToolResult("todo list updated:\n" + "\n".join(lines), display={"kind": "todos", "todos": ctx.todos})
