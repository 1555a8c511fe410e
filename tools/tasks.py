"""TaskOutput and TaskStop: read and end the background commands Shell started."""

from __future__ import annotations

from pydantic import BaseModel, Field

from kimi_cli.tools.background import TaskManager
from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult


class TaskOutputParams(BaseModel):
    id: str = Field(description="The task_id Shell returned, e.g. task-1.")
    since: int | None = Field(None, ge=0, description="Byte offset from an earlier TaskOutput (`next since`).")


class TaskOutput(Tool[TaskOutputParams]):
    name = "TaskOutput"
    description = (
        "Output of a background task (Shell with background: true) and whether it still runs. Pass `since` "
        "from the previous answer to get only what is new; long output keeps its head and tail."
    )
    Params = TaskOutputParams
    facts = READS

    def __init__(self, tasks: TaskManager) -> None:
        self.tasks = tasks

    async def run(self, params: TaskOutputParams, ctx: ToolContext) -> ToolResult:
        return ToolResult(self.tasks.read(params.id, params.since))


class TaskStopParams(BaseModel):
    id: str = Field(description="The task_id to stop.")


class TaskStop(Tool[TaskStopParams]):
    name = "TaskStop"
    description = "Stop a background task: it and every process it started are killed."
    Params = TaskStopParams
    facts = ToolFacts(commands=True)  # ends processes

    def __init__(self, tasks: TaskManager) -> None:
        self.tasks = tasks

    async def run(self, params: TaskStopParams, ctx: ToolContext) -> ToolResult:
        return ToolResult(await self.tasks.stop(params.id))
