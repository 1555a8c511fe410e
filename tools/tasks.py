"""TaskOutput and TaskStop: read and end the background commands Shell started."""

from __future__ import annotations

from pydantic import BaseModel, Field

from kimi_cli.tools.background import TaskManager
from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult


class TaskOutputParams(BaseModel):
    id: str = Field(description="The task_id, e.g. task-1.")
    since: int | None = Field(None, ge=0, description="The `next since` of the previous answer.")


class TaskOutput(Tool[TaskOutputParams]):
    name = "TaskOutput"
    description = (
        "Output of a background task (Shell with background: true) and whether it still runs; long output "
        "keeps head and tail. You are told when a task ends: call this when you need its output, never in a "
        "polling loop. Pass `since` to get only what is new. "
        'Example: {"id": "task-1", "since": 4096}'
    )
    Params = TaskOutputParams
    facts = READS

    def __init__(self, tasks: TaskManager) -> None:
        self.tasks = tasks

    async def run(self, params: TaskOutputParams, ctx: ToolContext) -> ToolResult:
        return ToolResult(self.tasks.read(params.id, params.since))


class TaskStopParams(BaseModel):
    id: str = Field(description="The task_id.")


class TaskStop(Tool[TaskStopParams]):
    name = "TaskStop"
    description = (
        "Stop a background task and every process it started. Stop the servers and watchers you started "
        'before you finish. Example: {"id": "task-1"}'
    )
    Params = TaskStopParams
    facts = ToolFacts(commands=True)  # ends processes

    def __init__(self, tasks: TaskManager) -> None:
        self.tasks = tasks

    async def run(self, params: TaskStopParams, ctx: ToolContext) -> ToolResult:
        return ToolResult(await self.tasks.stop(params.id))
