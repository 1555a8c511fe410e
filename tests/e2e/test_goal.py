"""`/goal CHECK` (issue 46, item 13) in a real terminal at 60 and 120 columns against the scripted server: rounds
go on until the check command passes in the sandbox, or the step limit is reached; the status line shows the
round and the steps; the check is the sandbox's like any command (it cannot write outside the workspace)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_fixtures import backends, sandbox_flags
from terminal import spawn

from scripted_server import ScriptedModelServer
from support import tool_call


@pytest.fixture(autouse=True)
def _kimi_home(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


def user_prompts(server: ScriptedModelServer) -> list[str]:
    messages = server.requests[-1]["messages"]
    return [m["content"] for m in messages if m["role"] == "user" and isinstance(m["content"], str)]


@pytest.mark.parametrize("cols", [60, 120])
def test_a_goal_runs_rounds_until_its_check_passes(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    server.add({"text": "looked " * 40 + "not fixed yet", "chunk_size": 4, "delay": 0.05})  # round 1: no change
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "done.txt", "content": "ok\n"}, "w1")]},
               {"text": "wrote done.txt"})  # fmt: skip
    term = spawn(repo, env, server, cols=cols)
    try:
        term.line("/goal test -f done.txt")
        if cols == 120:  # the status line, while round 1 runs (at 60 columns it keeps the higher segments)
            term.wait_for("goal round 1 · 0/50 steps")
        term.wait_for("wrote done.txt")
        term.wait_for("goal met")
        flat = " ".join(term.transcript.split())
        assert "exit 1" in flat and "exit 0" in flat and "after 2 round(s)" in flat, flat[-2000:]
        assert term.exit() == 0
    finally:
        term.close()
    assert len(server.requests) == 3  # round 1 (one request), round 2 (two): no round 3
    first = " ".join(user_prompts(server))
    assert "`test -f done.txt`" in first and "exits 1" in first and "round 2" in first


def test_a_goal_stops_at_its_step_limit(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "no luck"}, {"text": "still no luck"}, {"text": "never asked"})
    term = spawn(repo, env, server, cols=120)
    try:
        term.line("/goal --steps 2 test -f never.txt")
        term.wait_for("goal stopped")
        flat = " ".join(term.transcript.split())
        assert "the step limit (2) is reached" in flat and "2 round(s), 2 step(s)" in flat, flat[-2000:]
        assert term.exit() == 0
    finally:
        term.close()
    assert len(server.requests) == 2


def test_a_passing_check_a_bad_option_and_stop(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    term = spawn(repo, env, server, cols=60)
    try:
        term.line("/goal true")
        term.wait_for("goal met")
        term.line("/goal --steps x true")
        term.wait_for_output("--steps takes a number")
        term.line("/goal")
        term.wait_for_output("no goal set")
        assert term.exit() == 0
    finally:
        term.close()
    assert server.requests == []  # no round was needed


@pytest.mark.parametrize("backend", backends())
def test_the_check_runs_in_the_sandbox(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path, backend: str
) -> None:
    outside = home / "written-by-the-check"
    server.add({"text": "cannot help"})
    term = spawn(repo, env, server, *sandbox_flags(backend, home), cols=120)
    try:
        term.line(f"/goal --steps 1 touch {outside} && touch inside.txt")
        term.wait_for("goal stopped")
        assert term.exit() == 0
    finally:
        term.close()
    assert not outside.exists()  # the home is not writable from the sandbox
    assert not (repo / "inside.txt").exists()  # the && stopped at the refused write
