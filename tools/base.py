"""The tool protocol: pydantic params (-> JSON schema), a description, the facts of a call, and an async run.

Facts are how the rest of kimi knows what a call may do. The loop, parallel batching, checkpoints, change
notes, compaction, subagent kinds and plan mode all ask a call's facts; none of them knows a tool by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from kimi_cli.approval.policy import CallApproval
from kimi_cli.tools.schema import function_schema

if TYPE_CHECKING:
    from pathlib import Path

    from kimi_cli.media.image import ImageLimits
    from kimi_cli.tools.editor_files import EditorFiles
    from kimi_cli.tools.file_lock import FileLocks
    from kimi_cli.tools.workspace import Workspace


@dataclass(frozen=True)
class ToolFacts:
    """What one call may do. `paths` names the files it writes when its arguments say (None: any file)."""

    reads: bool = False  # reads the workspace or other local state
    writes: bool = False  # may change files in the workspace
    paths: tuple[str, ...] | None = None  # the files written, as the arguments name them; None: unknown
    commands: bool = False  # starts or stops processes (a command, a background task, a subagent that may)
    network: bool = False  # reaches beyond this machine
    read_paths: tuple[str, ...] = ()  # the files or folders a read names (nested AGENTS.md are offered for them)

    @property
    def read_only(self) -> bool:
        """Nothing changes: the call may run beside other reads, and an identical call may share its answer."""
        return not (self.writes or self.commands)

    @property
    def unknown_writes(self) -> bool:
        """May change files it cannot name in advance (a command, a subagent, an MCP tool)."""
        return self.writes and self.paths is None

    def writing(self, *paths: str) -> ToolFacts:
        """These facts for a call that writes exactly `paths`."""
        return ToolFacts(self.reads, True, tuple(paths), self.commands, self.network)

    def reading(self, *paths: str) -> ToolFacts:
        """These facts for a call that reads exactly `paths` (empty names are left out)."""
        return ToolFacts(self.reads, self.writes, self.paths, self.commands, self.network, tuple(p for p in paths if p))

    @staticmethod
    def union(many: Iterable[ToolFacts]) -> ToolFacts:
        """What a group of tools may do together (a subagent kind's tools); written paths become unknown."""
        items = list(many)
        writes = any(f.writes for f in items)
        return ToolFacts(
            reads=any(f.reads for f in items),
            writes=writes,
            commands=any(f.commands for f in items),
            network=any(f.network for f in items),
        )


READS = ToolFacts(reads=True)
NOTHING = ToolFacts()  # touches nothing outside the conversation (the plan)
ANYTHING = ToolFacts(reads=True, writes=True, commands=True, network=True)


@dataclass
class ToolResult:
    """What a tool gives back: text for the model, optional images, and a display hint for the UI.
    `usage` is the model usage the call spent itself (a subagent): it adds to the caller's."""

    output: str
    is_error: bool = False
    images: list[str] = field(default_factory=list)
    display: dict[str, Any] | None = None
    usage: dict[str, int] | None = None


@dataclass
class ToolContext:
    """What tools may touch: the workspace, the plan, and what the session lends one agent's tools. The
    session (kimi_cli.agent.toolbox) fills the fields; a subagent gets its own context."""

    workspace: Workspace
    todos: list[dict[str, str]] = field(default_factory=list)
    image_limits: ImageLimits | None = None  # how images are sized for the model in use (ReadMediaFile, MCP)
    # Folders outside the workspace ReadFile may read, as (folder as the model is told it, folder on disk):
    # the user's own skills (kimi_cli.tools.read_roots)
    read_roots: list[tuple[str, Path]] = field(default_factory=list)
    editor_files: EditorFiles | None = None  # ACP: reads and edits go through the editor's buffers
    file_locks: FileLocks | None = None  # subagents sharing a workspace: one edit of a file at a time
    prompt_urls: set[str] = field(default_factory=set)  # URLs the user typed in this agent's prompts (FetchURL)
    web_off: bool = False  # `/web off`: FetchURL refuses for this session
    hook_allowed: str = ""  # set on the one call's copy of the context a PreToolUse hook allowed (registry.run)

    def approval(self) -> CallApproval:
        """What the approver is told with a call of this context."""
        return CallApproval(self.workspace.root, self.hook_allowed)


P = TypeVar("P", bound=BaseModel)


class Tool(ABC, Generic[P]):
    """One tool. Subclasses set name, description, Params and facts, and implement run."""

    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[BaseModel]]
    facts: ClassVar[ToolFacts] = ANYTHING  # undeclared: assume the worst
    concurrent_group: ClassVar[str | None] = None  # calls of one group, in a row, run together (subagents)
    max_concurrent: ClassVar[int] = 8  # how many calls of this tool's batch run at once

    def declared(self) -> ToolFacts:
        """The most this tool may do, whatever the arguments (subagent kinds and plan mode read this)."""
        return self.facts

    def facts_for(self, params: P) -> ToolFacts:
        """What this call may do; tools whose effects depend on the arguments override it."""
        return self.declared()

    def observe_prompt(self, text: str, ctx: ToolContext) -> None:
        """The user's own words, once per turn, before the model sees them; a tool may note what it needs."""
        return None

    def schema(self) -> dict[str, Any]:
        return function_schema(self.name, self.description, self.Params)

    @abstractmethod
    async def run(self, params: P, ctx: ToolContext) -> ToolResult: ...
