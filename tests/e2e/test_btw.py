"""`/btw QUESTION` (issue 46, item 12) in a real terminal at 60 and 120 columns: a side question is one request
with the conversation and no tools; its question and answer never enter the history the next turn sends; typed
while a turn runs it is answered at once, beside the turn."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from terminal import spawn

from scripted_server import ScriptedModelServer


@pytest.fixture(autouse=True)
def _kimi_home(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


@pytest.mark.parametrize("cols", [60, 120])
def test_a_side_question_is_answered_and_forgotten(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    server.add({"text": "main answer"}, {"text": "side answer"}, {"text": "next answer"})
    term = spawn(repo, env, server, cols=cols)
    try:
        term.line("main question")
        term.wait_for("main answer")
        term.line("/btw what did you just say?")
        term.wait_for("side answer")
        term.wait_for_output("not kept in the conversation")
        term.line("go on")
        term.wait_for("next answer")
        assert term.exit() == 0
    finally:
        term.close()
    side = server.requests[1]
    assert not side.get("tools")  # no tools for a side question
    assert "what did you just say?" in side["messages"][-1]["content"]
    assert "main answer" in json.dumps(side["messages"])  # it reads the conversation
    after = json.dumps(server.requests[2]["messages"])
    assert "what did you just say?" not in after and "side answer" not in after


def test_btw_during_a_turn_is_answered_beside_it(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "slow " * 80, "chunk_size": 4, "delay": 0.05}, {"text": "quick side answer"})
    term = spawn(repo, env, server, cols=120)
    try:
        term.line("a long task")
        term.wait_for("esc to interrupt")
        term.line("/btw are you there?")
        term.wait_for("quick side answer")
        assert "queued: /btw" not in term.display
        term.wait_for("esc to interrupt", timeout=5)  # the turn still runs
        term.wait_for("1 step", timeout=60)
        assert term.exit() == 0
    finally:
        term.close()
    assert len(server.requests) == 2
