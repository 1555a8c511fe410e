"""The request body, encoded incrementally: a step costs the bytes it adds, not the whole history again.

The history is append-only between compactions, so each message is JSON-encoded once and kept. A message
object that is no longer at its index (compaction, undo) invalidates the cache from there on.
"""

from __future__ import annotations

import json
from typing import Any

from kimi_cli.llm.types import Message


def _dumps(value: Any) -> bytes:
    from kimi_cli.util.jsonsafe import utf8  # a lone surrogate from the model or a tool must not end the session

    return utf8(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


class EncodedHistory:
    """Keeps the encoded form of each message, keyed by the message object at each index."""

    def __init__(self) -> None:
        self._objects: list[Message] = []
        self._parts: list[bytes] = []
        self._tools: tuple[object, bytes] | None = None
        self.encoded_last = 0  # messages encoded by the last call (for tests and the debug log)

    def _update(self, messages: list[Message]) -> None:
        keep = 0
        limit = min(len(self._objects), len(messages))
        while keep < limit and self._objects[keep] is messages[keep]:
            keep += 1
        del self._objects[keep:], self._parts[keep:]
        for message in messages[keep:]:
            self._objects.append(message)
            self._parts.append(_dumps(message))
        self.encoded_last = len(messages) - keep

    def tools_json(self, tools: list[dict[str, Any]]) -> bytes:
        if self._tools is None or self._tools[0] is not tools:
            self._tools = (tools, _dumps(tools))
        return self._tools[1]

    def body(self, fields: dict[str, Any], messages: list[Message], tools: list[dict[str, Any]]) -> bytes:
        """`{...fields, "messages": [...], "tools": [...]}` with the cached pieces spliced in."""
        self._update(messages)
        out = [_dumps(fields)[:-1]]  # without its closing brace
        if tools:
            out += [b',"tools":', self.tools_json(tools)]
        out.append(b',"messages":[')
        if self._parts:  # one join, one copy of the history: m1 , m2 , ... mn
            pieces = [b","] * (2 * len(self._parts) - 1)
            pieces[0::2] = self._parts
            out += pieces
        out.append(b"]}")
        return b"".join(out)
