"""Arrow-key pickers (issue 46, item 3) in a real terminal at 60 and 120 columns: /model and /resume inside the
session, `kimi -r` before it starts. ↑/↓ move the mark, Enter takes it, Esc cancels, typing filters."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from terminal import PROMPT, Terminal, finish, spawn

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi

DOWN, UP, ESC = "\x1b[B", "\x1b[A", "\x1b"
COLS = pytest.mark.parametrize("cols", [60, 120])


def fits(term: Terminal) -> None:
    """Every line of the screen within the terminal's width (pyte wraps what is longer: nothing is)."""
    assert all(len(line) <= term.cols for line in term.display.splitlines())


def listed(screen: str) -> list[str]:
    """The picker's lines: those just above the question, up to the first that is not a picker line."""
    above = screen.split(" which")[0].splitlines()[:-1]
    out: list[str] = []
    for line in reversed(above):
        if not line.startswith(("❯ ", "  ")):
            break
        out.insert(0, line)
    return [line for line in out if "↑↓ move" not in line]


def marked(screen: str) -> str:
    """The line the mark is on: the last `❯ ` line above the question (echoed lines are further up)."""
    above = screen.split(" which")[0].splitlines()
    return next(line for line in reversed(above) if line.startswith("❯ "))


@COLS
def test_model_picker_moves_picks_filters_and_cancels(cols: int, repo: Path, env: dict, server: ScriptedModelServer):
    server.more_models = ["kimi-k2.6", "kimi-k3.1-pro"]
    server.add({"text": "answered by the picked model"}, {"text": "spare"})
    term = spawn(repo, env, server, cols=cols)
    try:
        term.line("/model")
        screen = term.wait_for("switch to which model?")
        assert "kimi-k3.1-pro" in marked(screen)  # the model in use (the tests' default) is marked first
        assert "kimi-k2.6" in screen and "kimi-k3.1-pro" in screen
        assert "esc cancels" in screen or cols < 70  # the hint, cut to the width at 60 columns
        fits(term)
        term.send(UP)
        term.send(UP)
        term.send(DOWN)
        term.settle()
        assert "kimi-k2.6" in marked(term.display)
        term.send("\r")
        term.wait_for("model: kimi-k2.6")
        term.line("hello")
        term.wait_for("answered by the picked model")
        assert [r["model"] for r in server.requests if r.get("messages")][-1] == "kimi-k2.6"
        term.line("/model")
        term.wait_for("switch to which model?")
        assert "kimi-k2.6" in marked(term.settle())  # now the one in use
        term.send("k3")  # a filter: only the lines with every word typed
        term.settle()
        assert [line.strip("❯ ") for line in listed(term.display)] == ["kimi-k3.1-pro"], term.display
        term.send(ESC)
        term.wait_for("model unchanged: kimi-k2.6")
        term.wait_for(PROMPT)
    finally:
        assert finish(term) == 0


def sessions(repo: Path, env: dict, server: ScriptedModelServer) -> tuple[str, str]:
    ids = []
    for task in ("the first task", "the second task"):
        server.add({"text": f"done: {task}"})
        ids.append(result_json(run_kimi(["-p", task, "--output-format", "json"], repo, env, server))["session_id"])
    return ids[0], ids[1]


@COLS
def test_resume_picker_in_the_session(cols: int, repo: Path, env: dict, server: ScriptedModelServer) -> None:
    one, two = sessions(repo, env, server)
    term = spawn(repo, env, server, cols=cols)
    try:
        term.line("/resume")
        screen = term.wait_for("resume which?")
        assert two[:15] in marked(screen)  # the newest first
        fits(term)
        term.send(DOWN)
        term.send("\r")
        term.wait_for(f"resumed session {one}")
        term.wait_for("you: the first task")
        term.line("/resume")
        term.wait_for("resume which?")
        term.send("second")  # the filter finds it by its title
        term.settle()
        assert two[:15] in marked(term.display)
        term.send("\r")
        term.wait_for(f"resumed session {two}")
        term.line("/resume")
        term.wait_for("resume which?")
        term.send(ESC)  # cancelled: the session stays
        deadline = time.monotonic() + 10
        while "resume which?" in term.display and time.monotonic() < deadline:
            term.pump(0.1)
        assert "resume which?" not in term.display
    finally:
        assert finish(term) == 0
    assert "resumed session" not in term.transcript.split("resume which?")[-1]


@COLS
def test_kimi_r_picks_before_the_session_starts(cols: int, repo: Path, env: dict, server: ScriptedModelServer) -> None:
    one, _two = sessions(repo, env, server)
    term = Terminal.start(repo, env, server, "-r", cols=cols)
    try:
        screen = term.wait_for("resume which?")
        fits(term)
        assert "↑↓ move" in screen
        term.send(UP)  # round the end: the oldest, the first task
        term.send("\r")
        term.wait_for(f"resumed session {one}")
        term.wait_for(PROMPT)
    finally:
        assert finish(term) == 0
    escaped = Terminal.start(repo, env, server, "-r", cols=cols)
    try:
        escaped.wait_for("resume which?")
        escaped.send(ESC)  # no pick: a new session
        escaped.wait_for(PROMPT)
        assert "resumed session" not in escaped.transcript
    finally:
        assert finish(escaped) == 0


def test_kimi_r_without_a_terminal_reads_a_number(
    repo: Path, env: dict, server: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """The fallback where stdin or stdout is not a terminal: the numbered list, then a number or an id's start."""
    import io

    from kimi_cli.frontends.terminal.picker import pick_session

    one, two = sessions(repo, env, server)
    monkeypatch.setenv("KIMI_HOME", str(Path(env["HOME"]) / ".kimi"))
    monkeypatch.setattr("sys.stdin", io.StringIO("2\n"))
    assert pick_session(repo) == one  # 2: the older one, as numbered
    listed = capsys.readouterr().out
    assert " 1  " + two in listed and " 2  " + one in listed and "resume which?" in listed
    monkeypatch.setattr("sys.stdin", io.StringIO(two[:-2] + "\n"))
    assert pick_session(repo) == two[:-2]  # an id's start, resolved when the session opens
