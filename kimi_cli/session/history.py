"""Repair a message history so every tool call has exactly one result, as the API requires."""

from __future__ import annotations

from kimi_cli.llm.types import Message

INTERRUPTED = (
    "interrupted: the session stopped before this call finished, so its effects are unknown. "
    "Check the current state before repeating it."
)


def repair_history(messages: list[Message]) -> list[Message]:
    """Add an 'interrupted' result for each dangling tool call; drop results that answer no call."""
    out: list[Message] = []
    pending: list[str] = []

    def close_pending() -> None:
        for call_id in pending:
            out.append({"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED})
        pending.clear()

    for msg in messages:
        role = msg.get("role")
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if call_id in pending:
                pending.remove(call_id)
                out.append(msg)
            continue
        close_pending()
        out.append(msg)
        if role == "assistant":
            pending.extend(c["id"] for c in msg.get("tool_calls") or [])
    close_pending()
    return out
