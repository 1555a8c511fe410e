"""Issue 46's small terminal items in a real terminal at 60 and 120 columns: `line\\` + Enter is a newline, a
`# Heading` starts at the left margin, the `/` menu shows each command's arguments, /deny says PREFIX in both
places, and /reasoning N prints an earlier turn's reasoning."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from terminal import spawn

from scripted_server import ScriptedModelServer


@pytest.fixture(autouse=True)
def _kimi_home(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


@pytest.mark.parametrize("cols", [60, 120])
def test_backslash_enter_heading_menu_and_deny_help(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    server.add({"text": "# Summary\n\nall good"})
    term = spawn(repo, env, server, cols=cols)
    try:
        term.send("first line\\\r")  # `\` then Enter: a newline, nothing sent
        term.wait_for("❯ first line\n…")  # the backslash gone, the continuation prompt of a second line
        assert not server.requests
        term.send("second line\r")
        term.wait_for("all good")
        heading = next(line for line in term.display.splitlines() if "Summary" in line)
        assert heading.startswith("Summary"), heading  # not centred
        term.send("/und")
        screen = term.wait_for("/undo [N | list]")  # the menu shows the argument-hint
        assert "put files back" in screen or cols < 80
        term.send("\x15")  # Ctrl-U: clear the line
        term.line("/help")
        term.wait_for_output("/deny [PREFIX]")
        assert "PROGRAM" not in term.transcript
        assert term.exit() == 0
    finally:
        term.close()
    assert server.requests[0]["messages"][-1]["content"] == "first line\nsecond line"


def test_reasoning_n_prints_an_earlier_turns_reasoning(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(
        {"reasoning": "pondering the first question", "text": "answer one"},
        {"reasoning": "weighing the second", "text": "answer two"},
    )
    term = spawn(repo, env, server, cols=60)
    try:
        term.line("question one")
        term.wait_for("answer one")
        term.line("question two")
        term.wait_for("answer two")
        assert "pondering" not in term.transcript  # hidden while it streamed
        term.line("/reasoning 2")
        term.wait_for("pondering the first question")
        term.line("/reasoning 1")
        term.wait_for("weighing the second")
        term.line("/reasoning 5")
        term.wait_for("no turn 5 back: this session has 2")
        assert term.exit() == 0
    finally:
        term.close()
