"""No line on ACP's stdin stops `kimi acp` from reading the next one.

The finding: a line of 100,000 nested arrays raised RecursionError in the stdin checker, which killed the
reader task; the agent stayed up and the next prompt was never answered. Now every line is parsed with its
nesting bounded (kimi_cli.frontends.acp.stdin_guard): such a line gets a JSON-RPC error and the reader goes on.
Beside the attacks: the ordinary session after them gets its answer.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable


class RawAgent:
    """`kimi acp` spoken to line by line, with a reader thread so a silent agent fails the test, not hangs it."""

    def __init__(self, repo: Path, env: dict, server: ScriptedModelServer) -> None:
        agent_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
        self.proc = subprocess.Popen([*kimi_executable(), "acp"], cwd=repo, env=agent_env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)  # fmt: skip
        self.lines: list[dict[str, Any]] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(json.loads(line))
                self.cond.notify_all()

    def send(self, raw: bytes | str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw.encode() if isinstance(raw, str) else raw)
        self.proc.stdin.write(b"\n")
        self.proc.stdin.flush()

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))

    def answer(self, request_id: Any, timeout: float = 60) -> dict[str, Any]:
        with self.cond:
            found = self.cond.wait_for(lambda: any(m.get("id") == request_id and "method" not in m
                                                   for m in self.lines), timeout)  # fmt: skip
            assert found, f"no answer to {request_id!r}; got {self.lines[-3:]}"
            return next(m for m in self.lines if m.get("id") == request_id and "method" not in m)

    def errors(self) -> list[dict[str, Any]]:
        with self.cond:
            return [m["error"] for m in self.lines if "error" in m]

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def a_session_answers(agent: RawAgent, repo: Path, first_id: int) -> None:
    agent.request(first_id, "session/new", {"cwd": str(repo), "mcpServers": []})
    session = agent.answer(first_id)["result"]["sessionId"]
    agent.request(first_id + 1, "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]})
    assert agent.answer(first_id + 1)["result"]["stopReason"] == "end_turn"


@pytest.mark.parametrize("first", [True, False], ids=["as-the-first-line", "after-initialize"])
def test_deeply_nested_lines_get_errors_and_the_next_prompt_is_answered(
    first: bool, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "hello back"})
    agent = RawAgent(repo, env, server)
    try:
        if not first:
            agent.request(1, "initialize", {"protocolVersion": 1})
            agent.answer(1)
        agent.send(b"[" * 100_000 + b"]" * 100_000)  # RecursionError in any recursive parser
        deep_params = {"x": json.loads("[" * 500 + "]" * 500)}  # parses, but no message nests like this
        agent.request(7, "session/new", deep_params)
        assert agent.answer(7)["error"]["code"] == -32600
        if first:
            agent.request(1, "initialize", {"protocolVersion": 1})
            agent.answer(1)
        a_session_answers(agent, repo, 10)
        assert agent.errors()[0]["code"] == -32700
        assert agent.close() == 0
    finally:
        if agent.proc.poll() is None:
            agent.proc.kill()


def test_a_line_over_the_stream_limit_is_refused_and_reading_goes_on(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "hello back"})
    agent = RawAgent(repo, env, server)
    try:
        agent.request(1, "initialize", {"protocolVersion": 1})
        agent.answer(1)
        agent.send(b'{"jsonrpc":"2.0","id":5,"method":"x","params":"' + b"a" * (2**26 + 4096) + b'"}')
        a_session_answers(agent, repo, 10)
        assert any(e["code"] == -32700 for e in agent.errors())
        assert agent.close() == 0
    finally:
        if agent.proc.poll() is None:
            agent.proc.kill()


def test_ordinary_messages_pass_unchanged(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    """A prompt of ordinary depth with long text and many blocks goes through the guard as it is."""
    server.add({"text": "read it"})
    agent = RawAgent(repo, env, server)
    try:
        agent.request(1, "initialize", {"protocolVersion": 1})
        agent.answer(1)
        agent.request(2, "session/new", {"cwd": str(repo), "mcpServers": []})
        session = agent.answer(2)["result"]["sessionId"]
        blocks = [{"type": "text", "text": f"part {n} " + "z" * 10_000} for n in range(20)]
        agent.request(3, "session/prompt", {"sessionId": session, "prompt": blocks})
        assert agent.answer(3)["result"]["stopReason"] == "end_turn"
        assert agent.errors() == []
        sent = server.requests[0]["messages"][-1]["content"]
        assert "part 19 " in sent and sent.count("z") == 200_000
        assert agent.close() == 0
    finally:
        if agent.proc.poll() is None:
            agent.proc.kill()
