"""Late tools for a model that does not take them inside the conversation: the fallback.

K3-family models take tools declared after the first request as a system message with a `tools` field and no
content (kimi_cli/extensions/mcp/in_messages.py), so the top-level tools block and the cached prefix stay as
they were. A history may still hold such messages where the model does not take them: a session resumed
under another model, or `/model` switched to one mid-session. Another server would refuse a system message
without content, or ignore the tools. For such a model each declaration leaves the messages and its tools
join the end of the top-level block (once each, by name), as the late tools of a model without
`tools_in_messages` always do; the prefix is then read again from the tools block on.
"""

from __future__ import annotations

from typing import Any

from kimi_cli.llm.types import Message


def is_declaration(message: Message) -> bool:
    return message.get("role") == "system" and "tools" in message and not message.get("content")


def fold_late_tools(messages: list[Message], tools: list[dict[str, Any]]) -> tuple[list[Message], list[dict[str, Any]]]:
    """(the messages without tools declarations, the tools block with their tools appended); the inputs
    themselves where the history holds no declaration."""
    if not any(is_declaration(m) for m in messages):
        return messages, tools
    names = {_name(t) for t in tools}
    kept: list[Message] = []
    added: list[dict[str, Any]] = []
    for message in messages:
        if not is_declaration(message):
            kept.append(message)
            continue
        for schema in message.get("tools") or []:
            name = _name(schema)
            if name not in names:
                names.add(name)
                added.append(schema)
    return kept, [*tools, *added]


def _name(schema: dict[str, Any]) -> str:
    function = schema.get("function") if isinstance(schema, dict) else None
    return str(function.get("name", "")) if isinstance(function, dict) else ""
