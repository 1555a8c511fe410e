"""Late tools declared inside the conversation (messages[].tools, K3 family) across a resume and a model switch
(issue 41): the session log keeps the declaration as it was sent, so a resumed K3 session sends the same bytes
(its cached prefix holds); a model without `tools_in_messages` never receives one: its tools join the end of
the top-level block instead. The session store is the real one on disk; the model client talks to the
scripted server on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kimi_cli.config import Endpoint, RetrySettings
from kimi_cli.llm.models import lookup
from kimi_cli.llm.provider import ChatProvider
from kimi_cli.session.store import Session

from scripted_server import ScriptedModelServer


def tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": name, "parameters": {"type": "object"}}}


BLOCK = [tool("ReadFile")]
LATE = {"role": "system", "tools": [tool("mcp__time__now"), tool("ReadFile")]}  # as in_messages.py writes it
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "the prefix"},
    {"role": "user", "content": "what time is it"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "ReadFile", "arguments": '{"path": "a"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a"},
    LATE,
]  # fmt: skip


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMI_HOME", str(tmp_path / "kimi"))
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


def send(server: ScriptedModelServer, model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    server.add({"text": "ok"})
    provider = ChatProvider(Endpoint("openai", server.base_url, model, "EMPTY"), RetrySettings(max_retries=0), "s",
                            model_info=lookup(model, "openai"))  # fmt: skip

    async def main() -> None:
        try:
            await provider.complete(messages, BLOCK, max_tokens=500)
        finally:
            await provider.aclose()

    asyncio.run(main())
    return server.requests[-1]


def test_a_resumed_session_keeps_its_tools_declarations_and_sends_them_as_before(workspace: Path) -> None:
    session = Session.create(workspace, "a task", "kimi-k3.1-pro")
    for message in HISTORY:
        session.append_message(message)
    session.close()
    resumed = Session.open(workspace, session.id).messages()
    assert resumed == HISTORY and "content" not in resumed[-1]  # the platform refuses a declaration with content
    assert lookup("kimi-k3.1-pro", "openai").tools_in_messages
    with ScriptedModelServer() as server:
        before = send(server, "kimi-k3.1-pro", HISTORY)
        after = send(server, "kimi-k3.1-pro", resumed)
    assert after["messages"] == before["messages"] and after["messages"][-1] == LATE
    assert after["tools"] == BLOCK  # the top-level block as first sent: the prefix is unchanged


def test_a_model_without_tools_in_messages_gets_the_late_tools_in_its_tools_block() -> None:
    assert not lookup("kimi-k2.7-code", "openai").tools_in_messages
    with ScriptedModelServer() as server:
        body = send(server, "kimi-k2.7-code", HISTORY)
    assert not any("tools" in m for m in body["messages"])
    assert body["messages"] == HISTORY[:-1]
    assert [t["function"]["name"] for t in body["tools"]] == ["ReadFile", "mcp__time__now"]  # once each, at the end
    assert HISTORY[-1] is LATE and len(HISTORY) == 5  # the agent's own history is left as it was
