"""Issue 30's features in the terminal (a real pty, the screen read through pyte): Shift+Tab and plan ->
approve -> execute, a plan commented on, .claude/commands/review.md as /review (menu, /help, expansion),
/hooks, /skills, /fork and /init with undo."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from terminal import Terminal

from scripted_server import ScriptedModelServer
from support import TESTS_DIR, tool_call, tool_results, wait_until

PROMPT = "❯"
SHIFT_TAB = "\x1b[Z"


@pytest.fixture(autouse=True)
def _kimi_home(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


def spawn(repo: Path, env: dict, server: ScriptedModelServer, *args: str) -> Terminal:
    term = Terminal.start(repo, env, server, *args, cols=120)
    term.wait_for(PROMPT)
    return term


def wait_status(term: Terminal, text: str, timeout: float = 30) -> None:
    """Until the status line (the bottom row) shows `text`."""
    try:
        wait_until(lambda: term.pump(0.05) and text in term.status_line(), timeout, f"{text!r} on the status line")
    except BaseException:
        print(term.display)
        raise


def plan_script(server: ScriptedModelServer) -> None:
    server.add(
        {"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1"),
                        tool_call("WriteFile", {"path": "calc.py", "content": "oops\n"}, "w1")]},
        {"text": "PLAN: 1. In calc.py, change `a - b` to `a + b`. 2. Run the tests."},
    )  # fmt: skip


def test_shift_tab_to_plan_mode_then_approve_runs_the_plan(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    plan_script(server)
    fix = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}
    server.add({"tool_calls": [tool_call("StrReplaceFile", fix, "s1")]}, {"text": "Fixed calc.py."})
    term = spawn(repo, env, server)
    try:
        term.send(SHIFT_TAB)  # auto -> plan
        term.wait_for("plan mode")
        term.line("fix the add bug")
        term.wait_for("approve the plan?")
        term.wait_for_output("PLAN: 1.")
        assert "a - b" in (repo / "calc.py").read_text()  # nothing changed while planning
        term.send("y")  # one key, no Enter
        term.wait_for_output("Fixed calc.py.")
        wait_status(term, "auto mode")
        assert term.exit() == 0
    finally:
        term.close()
    assert "a + b" in (repo / "calc.py").read_text()
    first = json.dumps(server.requests[0]["messages"])
    assert "Plan mode is on" in first
    assert "refused: plan mode is on" in tool_results(server, 1)[-1]
    approved = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "user"]
    assert "Plan mode is over" in approved[-2] and approved[-1].startswith("I approve the plan")
    assert any("PLAN: 1." in str(m.get("content")) for m in server.requests[2]["messages"])  # the plan in context
    assert server.requests[0]["tools"] == server.requests[2]["tools"]  # the tools block never changed


def test_a_comment_keeps_plan_mode(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    plan_script(server)
    server.add({"text": "PLAN v2: also add a test."})
    term = spawn(repo, env, server, "--plan")
    try:
        term.wait_for("plan mode")
        term.line("fix the add bug")
        term.wait_for("approve the plan?")
        term.line("also add a test")
        term.wait_for_output("PLAN v2")
        term.wait_for("approve the plan?")
        term.line("")  # Enter: keep planning, nothing sent
        wait_status(term, "plan mode")
        assert term.exit() == 0
    finally:
        term.close()
    last = [m["content"] for m in server.requests[2]["messages"] if m["role"] == "user"]
    assert last[-1] == "also add a test" and not any("Plan mode is over" in str(c) for c in last)
    assert len(server.requests) == 3


REVIEW = """---
description: Review the changes with a focus
argument-hint: [focus]
---
Review my changes with a focus on $ARGUMENTS.
"""


def test_claude_review_command_completes_shows_in_help_and_runs(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    (repo / ".claude" / "commands").mkdir(parents=True)
    (repo / ".claude" / "commands" / "review.md").write_text(REVIEW)
    server.add({"text": "Reviewed."})
    term = spawn(repo, env, server)
    try:
        term.send("/rev")
        term.wait_for("Review the changes with a focus")  # the / menu, with its description
        term.send("\x15")  # Ctrl-U: clear the line
        term.line("/help")
        term.wait_for_output("/review [focus]")
        assert "(project: .claude/commands)" in term.transcript
        term.line("/review naming")
        term.wait_for_output("Reviewed.")
        term.wait_for(PROMPT)
        assert term.exit() == 0
    finally:
        term.close()
    assert server.requests[0]["messages"][-1]["content"] == "Review my changes with a focus on naming."


def test_hooks_skills_fork_and_init_in_the_terminal(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    config = home / ".kimi" / "config.toml"
    config.write_text(config.read_text() + '\n[[hooks.Stop]]\ncommand = "true"\n')
    (home / ".kimi/skills/pdf").mkdir(parents=True)
    (home / ".kimi/skills/pdf/SKILL.md").write_text("---\nname: pdf\ndescription: Read PDF files\n---\nbody\n")
    agents = "# calc\n\nTest: `python -m pytest`\n"
    server.add(
        {"text": "hello there"},
        {"tool_calls": [tool_call("WriteFile", {"path": "AGENTS.md", "content": agents}, "w")]},
        {"text": "Wrote AGENTS.md."},
    )
    term = spawn(repo, env, server)
    try:
        term.line("/hooks")
        term.wait_for_output("Stop: true (timeout 60 s, user)")
        term.line("/skills")
        term.wait_for_output("Read PDF files")
        term.line("say hello")
        term.wait_for_output("hello there")
        term.line("/fork")
        term.wait_for_output("forked: now in")
        term.line("/init")
        term.wait_for_output("+Test: `python -m pytest`")
        term.wait_for_output("AGENTS.md: +")
        assert term.transcript.count("+Test: `python -m pytest`") == 1  # the diff shown once (issue 46)
        assert (repo / "AGENTS.md").read_text() == agents
        term.line("/undo")
        term.wait_for_output("restored the files")
        term.wait_for(PROMPT)
        assert term.exit() == 0
    finally:
        term.close()
    assert not (repo / "AGENTS.md").exists()
    init_task = server.requests[1]["messages"][-1]["content"]
    assert init_task.startswith("Write AGENTS.md") and "hello there" in json.dumps(server.requests[1]["messages"])


def test_a_claude_code_guard_blocks_rm_rf_in_the_terminal(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    guard = TESTS_DIR / "fixtures" / "hooks" / "block_rm_rf.py"
    config = home / ".kimi" / "config.toml"
    config.write_text(config.read_text() + f'\n[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = "python3 {guard}"\n')
    (repo / "build").mkdir()
    server.add({"tool_calls": [tool_call("Shell", {"command": "rm -rf build"}, "s1")]}, {"text": "kept build"})
    term = spawn(repo, env, server)
    try:
        term.line("clean up")
        term.wait_for_output("kept build")
        assert "rm -rf is not allowed here" in term.transcript  # the model's reason, shown as the call's result
        assert term.exit() == 0
    finally:
        term.close()
    assert (repo / "build").is_dir() and "rm -rf is not allowed here" in tool_results(server, 1)[-1]
