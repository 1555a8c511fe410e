"""Late tools declared inside the conversation, for models that take it (models.toml `tools_in_messages`).

A tool that joins after the first request (an MCP server ready late, what SearchTools finds, a deferred tool
called by its full name) would otherwise be appended to the top-level tools block, which comes before every
message: the whole cached prefix is then read again. The K3 family instead takes a `system` message with a
`tools` field (ordinary function definitions) and no `content` key at all; the tools are callable from there
on. The top-level block and every earlier message then stay byte-identical.

ToolRegistry.declare_later hands us the new schemas whenever they arrive (mid-step too: a SearchTools call);
they go out as one message just before the next request (Agent.between_steps), so never between a call and
its result. A compaction that drops such a message loses its tools from the model's view: the next
declaration carries them again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kimi_cli.llm.types import Message


class ToolsInMessages:
    def __init__(self, registry: Any, history: Callable[[], list[Message]]) -> None:
        self.history = history  # the agent's messages as they are now (compaction replaces the list)
        self.pending: list[dict[str, Any]] = []
        self.declared: list[tuple[Message, list[dict[str, Any]]]] = []
        registry.declare_later = self.declare

    def declare(self, schemas: list[dict[str, Any]]) -> None:
        self.pending += schemas

    async def __call__(self) -> list[Message]:
        """The declaration to add before the next request: what arrived since, and whatever a compaction
        took out of the history; [] when there is nothing new."""
        present = {id(m) for m in self.history()}
        lost = [schema for message, schemas in self.declared if id(message) not in present for schema in schemas]
        if lost:
            self.declared = [(m, s) for m, s in self.declared if id(m) in present]
        schemas, self.pending = lost + self.pending, []
        if not schemas:
            return []
        message: Message = {"role": "system", "tools": schemas}  # no content key: the platform refuses one
        self.declared.append((message, schemas))
        return [message]
