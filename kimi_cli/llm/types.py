"""Plain data passed between the provider client and the agent loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]


@dataclass
class Usage:
    """Token counts for one request, or summed over a run."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0  # input the server says it wrote to the prompt cache (priced apart: costs.py)

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        self.cache_write_tokens += other.cache_write_tokens

    @classmethod
    def from_dict(cls, data: dict[str, int]) -> Usage:
        """From `as_dict()`'s shape (total_tokens is derived, so it is ignored)."""
        return cls(
            int(data.get("prompt_tokens", 0)), int(data.get("completion_tokens", 0)), int(data.get("cached_tokens", 0)),
            int(data.get("cache_write_tokens", 0)),
        )  # fmt: skip

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, int]:
        out = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.cache_write_tokens:  # only where a server reports writes: every other result keeps its shape
            out["cache_write_tokens"] = self.cache_write_tokens
        return out


@dataclass
class ToolCallRequest:
    """One tool call as the model asked for it; arguments stay the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass
class Completion:
    """One finished model answer."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    usage_reported: bool = True  # False when the server sent no usage: budgets fall back to estimates

    def to_message(self) -> Message:
        """The assistant message to append to history, in the shape Kimi's API accepts back."""
        msg: Message = {"role": "assistant"}
        # A tool-call message with blank text must omit content (Moonshot answers 400 otherwise).
        if self.text.strip() or not self.tool_calls:
            msg["content"] = self.text
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        # Thinking models need their reasoning sent back on tool-call turns.
        if self.reasoning:
            msg["reasoning_content"] = self.reasoning
        return msg
