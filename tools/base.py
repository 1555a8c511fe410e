"""The tool protocol: pydantic params (-> JSON schema), a description, and an async run."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from kimi_cli.tools.schema import function_schema

if TYPE_CHECKING:
    from kimi_cli.tools.workspace import Workspace


class ToolError(Exception):
    """A failure the model should read and act on; it becomes the tool result, never a crash."""


@dataclass
class ToolResult:
    """What a tool gives back: text for the model, optional images, and a display hint for the UI."""

    output: str
    is_error: bool = False
    images: list[str] = field(default_factory=list)
    display: dict[str, Any] | None = None


@dataclass
class ToolContext:
    """What tools may touch: the workspace, the plan, and services such as the shell sandbox."""

    workspace: Workspace
    todos: list[dict[str, str]] = field(default_factory=list)
    services: dict[str, Any] = field(default_factory=dict)


P = TypeVar("P", bound=BaseModel)


class Tool(ABC, Generic[P]):
    """One tool. Subclasses set name, description and Params, and implement run."""

    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[BaseModel]]
    changes_files: ClassVar[bool] = False
    read_only: ClassVar[bool] = False  # reads only: may run concurrently with other reads
    concurrent_group: ClassVar[str | None] = None  # calls of one group, in a row, run together (subagents)

    def is_read_only(self, params: P) -> bool:
        """Whether this call only reads; tools whose answer depends on the arguments override it."""
        return self.read_only

    def schema(self) -> dict[str, Any]:
        return function_schema(self.name, self.description, self.Params)

    @abstractmethod
    async def run(self, params: P, ctx: ToolContext) -> ToolResult: ...
