"""Assembles streamed chat-completion chunks (plain dicts) into one Completion."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kimi_cli.llm.failures import EmptyStream, StreamIncomplete
from kimi_cli.llm.types import Completion, ToolCallRequest, Usage


@dataclass
class StreamCallbacks:
    """Where streamed pieces go while an answer arrives."""

    on_text: Callable[[str], None] = lambda _d: None
    on_reasoning: Callable[[str], None] = lambda _d: None
    on_retry: Callable[[int, float, str], None] = lambda _a, _w, _e: None


class ChunkAssembler:
    """Text, reasoning, tool-call deltas and usage, in whichever shape the server sends them."""

    def __init__(self, cb: StreamCallbacks) -> None:
        self.cb = cb
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.usage_seen = False
        self.chunks = 0

    def feed(self, chunk: dict[str, Any]) -> None:
        self.chunks += 1
        if chunk.get("usage"):
            self._read_usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            if choice.get("usage"):  # Moonshot puts usage inside the last choice
                self._read_usage(choice["usage"])
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning:
                self.reasoning.append(reasoning)
                self.cb.on_reasoning(reasoning)
            if delta.get("content"):
                self.text.append(delta["content"])
                self.cb.on_text(delta["content"])
            for position, tc in enumerate(delta.get("tool_calls") or []):
                self._feed_call(position, tc)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def _feed_call(self, position: int, tc: dict[str, Any]) -> None:
        index = tc.get("index")
        slot = self.calls.setdefault(
            index if isinstance(index, int) else position, {"id": None, "name": "", "args": []}
        )
        if tc.get("id") and not slot["id"]:
            slot["id"] = tc["id"]
        fn = tc.get("function") or {}
        name = fn.get("name")
        # Some servers repeat the whole name in every chunk; others split it. Only a new piece is appended.
        if name and name != slot["name"]:
            slot["name"] += name
        if fn.get("arguments"):
            slot["args"].append(fn["arguments"])

    def _read_usage(self, data: dict[str, Any]) -> None:
        details = data.get("prompt_tokens_details") or {}
        details = details if isinstance(details, dict) else {}
        cached = data.get("cached_tokens") or details.get("cached_tokens")
        # Prompt-cache writes, under the names relays use for them (Anthropic's, OpenRouter's); Moonshot's
        # chat usage, as its own client reads it, has cached_tokens only.
        written = (
            data.get("cache_creation_input_tokens") or details.get("cache_write_tokens")
            or details.get("cache_creation_tokens")
        )  # fmt: skip
        self.usage = Usage(
            prompt_tokens=int(data.get("prompt_tokens") or 0),
            completion_tokens=int(data.get("completion_tokens") or 0),
            cached_tokens=int(cached or 0),
            cache_write_tokens=int(written) if isinstance(written, int) and written > 0 else 0,
        )
        self.usage_seen = self.usage.prompt_tokens > 0 or self.usage.completion_tokens > 0

    def finish(self) -> Completion:
        if self.chunks == 0:
            raise EmptyStream("the server answered 200 with an empty stream (often a context overflow)")
        if self.finish_reason is None:
            raise StreamIncomplete("no finish_reason before the stream ended")
        calls = [
            ToolCallRequest(id=slot["id"] or f"call_{index}", name=slot["name"], arguments="".join(slot["args"]))
            for index, slot in sorted(self.calls.items())
        ]
        return Completion(
            text="".join(self.text),
            reasoning="".join(self.reasoning),
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
            usage_reported=self.usage_seen,
        )
