"""[notifications] (issue 46, item 10) in a real terminal at 60 and 120 columns: kimi asks the terminal for focus
reports (CSI ?1004h); after a focus-out report a turn's end is told with OSC 9 (or the bell), an approval that
waits with notify-send too (a host program, run without the API key); while focused, nothing is sent, and the
reports never reach the input line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from terminal import spawn

from scripted_server import ScriptedModelServer
from support import TEST_KEY, tool_call, wait_until

FOCUS_IN, FOCUS_OUT = "\x1b[I", "\x1b[O"


@pytest.fixture(autouse=True)
def _kimi_home(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


def raw(term: object) -> str:
    return "".join(term.raw)  # type: ignore[attr-defined]


@pytest.mark.parametrize("cols", [60, 120])
def test_a_turn_that_ends_while_unfocused_is_told_by_osc_9(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    server.add({"text": "first answer"}, {"text": "second answer"})
    term = spawn(repo, env, server, cols=cols, extra_env={"TERM_PROGRAM": "WezTerm"})
    try:
        assert "\x1b[?1004h" in raw(term)
        term.send(FOCUS_IN)  # focused: a turn's end is not told
        term.line("hello")
        term.wait_for("first answer")
        term.settle()
        assert "\x1b]9;" not in raw(term)
        term.send(FOCUS_OUT)
        term.line("again")
        term.wait_for("second answer")
        wait_until(lambda: (term.pump(0.1), "\x1b]9;kimi: turn done · again\x07" in raw(term))[1], timeout=10)
        assert term.exit() == 0
    finally:
        term.close()
    assert "\x1b[?1004l" in raw(term)  # focus reports off again at the end
    assert [r["messages"][-1]["content"] for r in server.requests] == ["hello", "again"]  # no `[I` or `[O` typed


def test_an_approval_waiting_unfocused_rings_and_runs_notify_send_without_the_key(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, tmp_path: Path
) -> None:
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write('\n[approval]\npolicy = "ask"\n')
    record = tmp_path / "notified.txt"
    bin_dir = tmp_path / "bin"  # outside the workspace
    bin_dir.mkdir()
    fake = bin_dir / "notify-send"
    fake.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> {record}\nenv | grep -c KIMI_API_KEY >> {record}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch made.txt"}, "c1")]}, {"text": "made it"})
    extra = {"PATH": f"{bin_dir}:{env['PATH']}", "DISPLAY": ":99", "KIMI_API_KEY": TEST_KEY}
    term = spawn(repo, env, server, cols=120, extra_env=extra)
    try:
        term.send(FOCUS_OUT)
        term.line("make the file")
        term.wait_for("Enter = no ›")
        wait_until(lambda: record.exists() and "approve touch made.txt?" in record.read_text(), timeout=10)
        term.send("y")
        term.wait_for("made it")
        assert term.exit() == 0
    finally:
        term.close()
    text = record.read_text()
    assert "--app-name=kimi|--|kimi|waiting for you: approve touch made.txt?|" in text
    assert "\n0\n" in text or text.endswith("0\n")  # the key variable was not in its environment
    assert "\x07" in raw(term)  # no TERM_PROGRAM: the bell


def test_notifications_off_sends_nothing(repo: Path, env: dict, home: Path, server: ScriptedModelServer) -> None:
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write("\n[notifications]\nenabled = false\n")
    server.add({"text": "quiet answer"})
    term = spawn(repo, env, server, cols=60, extra_env={"TERM_PROGRAM": "WezTerm"})
    try:
        term.send(FOCUS_OUT)
        term.line("hello")
        term.wait_for("quiet answer")
        term.settle()
        assert term.exit() == 0
    finally:
        term.close()
    assert "\x1b[?1004h" not in raw(term) and "\x1b]9;" not in raw(term)
