"""Steering a running turn (issue 46, item 12) in a real terminal at 60 and 120 columns: a message typed during
a turn and sent with Ctrl-S reaches the model in the next request of the same turn; one the turn ends without
reading is sent as the next prompt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from terminal import spawn

from scripted_server import ScriptedModelServer
from support import tool_call

CTRL_S = "\x13"


@pytest.fixture(autouse=True)
def _kimi_home(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


def _user_texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], str)]


@pytest.mark.parametrize("cols", [60, 120])
def test_ctrl_s_sends_a_typed_message_into_the_running_turn(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    server.add(
        # The first step streams slowly, then calls a tool: the turn goes on to a second request.
        {"text": "looking " * 40, "chunk_size": 4, "delay": 0.05,
         "tool_calls": [tool_call("Shell", {"command": "echo looked"}, "c1")]},
        {"text": "done with tabs"},
    )  # fmt: skip
    term = spawn(repo, env, server, cols=cols)
    try:
        term.line("tidy calc.py")
        term.wait_for("esc to interrupt")
        term.line("use tabs please")
        term.wait_for("queued: use tabs please")
        term.send(CTRL_S)
        term.wait_for_output("steering: sent into the running turn")
        term.wait_for("done with tabs", timeout=60)
        term.settle()
        assert "queued: use tabs" not in term.display  # it left the queue
        assert term.exit() == 0
    finally:
        term.close()
    assert len(server.requests) == 2  # one turn: the steered message started none of its own
    second = server.requests[1]["messages"]
    assert second[-1] == {"role": "user", "content": "use tabs please"}
    assert any(m["role"] == "tool" for m in second)  # after the first step's tool result, in the same turn
    assert "use tabs please" not in str(server.requests[0]["messages"])


def test_a_steered_message_the_turn_did_not_read_is_the_next_prompt(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "a long answer " * 40, "chunk_size": 4, "delay": 0.05}, {"text": "second answer"})
    term = spawn(repo, env, server, cols=60)
    try:
        term.line("explain calc.py")
        term.wait_for("esc to interrupt")
        term.send("and the tests")  # on the input line, not queued yet: Ctrl-S takes it from there
        term.send(CTRL_S)
        term.wait_for_output("steering: sent into the running turn")
        term.wait_for("second answer", timeout=60)
        assert term.exit() == 0
    finally:
        term.close()
    assert len(server.requests) == 2
    assert _user_texts(server.requests[1])[-1] == "and the tests"
    assert "and the tests" not in str(server.requests[0]["messages"])


def test_ctrl_s_with_nothing_typed_says_so_and_the_turn_goes_on(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "answer " * 40, "chunk_size": 4, "delay": 0.05})
    term = spawn(repo, env, server, cols=120)
    try:
        term.line("hello")
        term.wait_for("esc to interrupt")
        term.send(CTRL_S)
        term.wait_for("nothing to steer with")
        term.wait_for_output("answer answer answer")
        assert term.exit() == 0
    finally:
        term.close()
    assert len(server.requests) == 1
