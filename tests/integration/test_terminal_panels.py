"""Snapshot tests of what the terminal shows: tool panels, titles, the approval layout and the status line,
rendered to a rich Console of a fixed width and compared with the text kept here."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console, RenderableType

from kimi_cli.agent.events import ToolOutput
from kimi_cli.frontends.terminal.approval_view import approval_view
from kimi_cli.frontends.terminal.panels import render_result
from kimi_cli.frontends.terminal.status import SessionStatus
from kimi_cli.frontends.terminal.titles import tool_title
from kimi_cli.llm.costs import Rates

K31 = Rates(2.0, 0.2, 10.0, "kimi-k3.1-pro: the model table")


def render(renderable: RenderableType, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, highlight=False, markup=False,
                      emoji=False, force_terminal=False)  # fmt: skip
    console.print(renderable)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(line.rstrip() for line in out.splitlines())


def result(name: str, display: dict, output: str = "ok") -> ToolOutput:
    return ToolOutput("c1", name, output, False, 1.0, display)


def shell(output: str, command: str, code: int | None = 0, **extra: object) -> ToolOutput:
    display = {"kind": "shell", "command": command, "exit_code": code, "timed_out": False, **extra}
    return ToolOutput("c1", "Shell", output, code not in (0, None), 1.0, display)


SEQ_60 = """\
╭─ $ seq 1 3000 ────────────────────────────╮
│ 1                                         │
│ 2                                         │
│ 3                                         │
│ 4                                         │
│ … 2,991 lines hidden (ctrl-o shows all) … │
│ 2996                                      │
│ 2997                                      │
│ 2998                                      │
│ 2999                                      │
│ 3000                                      │
╰────────── exit 0 · 3,000 lines ───────────╯"""


def test_a_long_command_output_shows_head_tail_and_what_is_hidden() -> None:
    out = "exit code: 0\n" + "\n".join(str(i) for i in range(1, 3001))
    assert render(render_result(shell(out, "seq 1 3000"), 60), 60) == SEQ_60
    assert render(render_result(shell(out, "seq 1 3000"), 120), 120) == SEQ_60  # bounded whatever the width


LONG_LINE_60 = """\
╭─ $ python3 -c "print('x'*5000)" ─────────────────────────╮
│ xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx …+4,958 chars │
╰───────────────────────── exit 0 ─────────────────────────╯"""


@pytest.mark.parametrize("width", [60, 120])
def test_a_5000_character_line_is_clipped_to_the_width_with_a_marker(width: int) -> None:
    shown = render(render_result(shell("exit code: 0\n" + "x" * 5000, "python3 -c \"print('x'*5000)\""), width), width)
    assert len(shown.splitlines()) == 3  # one row, not 90
    assert all(len(line) <= width for line in shown.splitlines())
    assert re.search(r"…\+[\d,]+ chars", shown)
    if width == 60:
        assert shown == LONG_LINE_60


NEW_FILE_HEAD = """\
╭─ new file app.py ─────────────────────╮
│ @@ -0,0 +1,450 @@                     │
│ +line 0                               │
│ +line 1                               │"""
NEW_FILE_TAIL = """\
│ +line 18                              │
│ … 431 more lines (ctrl-o shows all) … │
╰─────────────── +450 -0 ───────────────╯"""


def test_a_450_line_new_file_is_summarised_with_its_first_lines() -> None:
    diff = "--- a/app.py\n+++ b/app.py\n@@ -0,0 +1,450 @@\n" + "".join(f"+line {i}\n" for i in range(450))
    shown = render(render_result(result("WriteFile", {"kind": "diff", "path": "app.py", "diff": diff}), 60), 60)
    assert shown.startswith(NEW_FILE_HEAD) and shown.endswith(NEW_FILE_TAIL)
    assert len(shown.splitlines()) == 23  # not ~1,000


def test_an_edit_diff_names_its_counts_and_hunks() -> None:
    hunk = "@@ -{0},3 +{0},3 @@\n ctx\n-old {0}\n+new {0}\n"
    diff = "--- a/m.py\n+++ b/m.py\n" + "".join(hunk.format(n) for n in (1, 40, 80))
    shown = render(render_result(result("StrReplaceFile", {"kind": "diff", "path": "m.py", "diff": diff}), 60), 60)
    assert shown.splitlines()[0].startswith("╭─ edited m.py ")
    assert "+3 -3 · 3 hunks" in shown.splitlines()[-1]


def test_reading_tools_say_what_they_read_or_matched() -> None:
    read = result("ReadFile", {"kind": "read", "path": "a.py", "lines": 120, "first": 1, "last": 120, "total": 450})
    grep = result("Grep", {"kind": "grep", "pattern": "def", "matches": 12, "files": 4, "truncated": False})
    glob = result("Glob", {"kind": "glob", "pattern": "*.py", "count": 7, "truncated": False})
    assert render(render_result(read, 60), 60) == "  ⎿ read 120 lines (1-120 of 450)"
    assert render(render_result(grep, 60), 60) == "  ⎿ 12 matching lines in 4 files"
    assert render(render_result(glob, 60), 60) == "  ⎿ 7 files"


def test_a_background_start_says_so_instead_of_exit_none() -> None:
    shown = render(render_result(shell("task_id: task-1\nstarted", "npm start", None, task="task-1"), 60), 60)
    assert "started task-1 in the background" in shown and "None" not in shown


def test_a_plan_is_a_panel_with_a_count() -> None:
    todos = [{"title": "Reproduce", "status": "done"}, {"title": "Fix parse()", "status": "in_progress"},
             {"title": "Test", "status": "pending"}]  # fmt: skip
    shown = render(render_result(result("SetTodoList", {"kind": "todos", "todos": todos}), 60), 60)
    assert shown == (
        "╭─ plan · 1/3 done ─╮\n"
        "│ ☑ Reproduce       │\n"
        "│ ◐ Fix parse()     │\n"
        "│ ☐ Test            │\n"
        "╰───────────────────╯"
    )


def test_escapes_in_tool_output_are_shown_not_obeyed() -> None:
    shown = render(render_result(shell("exit code: 0\n\x1b]52;c;ZXZpbA==\x07 owned", "echo"), 60), 60)
    assert "\x1b" not in shown and "\\x1b]52;c;ZXZpbA==\\x07 owned" in shown


TITLES = [
    ("SetTodoList", {"todos": [{"title": "a", "status": "done"}, {"title": "b"}]}, "Plan: 2 items, 1 done"),
    ("Shell", {"command": "pytest -q"}, "$ pytest -q"),
    ("Shell", {"command": "npm start", "background": True}, "$ npm start  (in the background)"),
    ("ReadFile", {"path": "src/app.py", "line_offset": 120, "n_lines": 60}, "Read src/app.py (lines 120-179)"),
    ("ReadFile", {"path": "src/app.py"}, "Read src/app.py"),
    ("WriteFile", {"path": "a.txt", "content": "x\ny\n"}, "Write a.txt (2 lines)"),
    ("StrReplaceFile", {"path": "a.py", "edits": [{"old": "a", "new": "b"}, {"old": "c"}]}, "Edit a.py (2 edits)"),
    ("Grep", {"pattern": "def \\w+", "glob": "*.py"}, "Search /def \\w+/ (*.py)"),
    ("Glob", {"pattern": "**/*.md", "directory": "docs"}, "Find **/*.md in docs"),
    ("Git", {"command": "commit", "message": "fix it", "all": True}, 'git commit -m "fix it" --all'),
    ("Agent", {"task": "map the\nparser", "kind": "explore"}, "Agent (explore): map the parser"),
    ("TaskOutput", {"id": "task-1"}, "Output of task-1"),
    ("mcp__memory__create", {"names": ["a", None]}, 'memory · create {"names": ["a", null]}'),
]


@pytest.mark.parametrize(("name", "args", "expected"), TITLES, ids=[t[0] + str(i) for i, t in enumerate(TITLES)])
def test_every_tool_has_a_human_title_never_a_python_repr(name: str, args: dict, expected: str) -> None:
    title = tool_title(name, json.dumps(args))
    assert title == expected
    assert "{'" not in title and "[{" not in title and "None" not in title


APPROVAL_60 = """\
╭─ run this command? ──╮
│ pytest -q tests/x.py │
╰──────────────────────╯
   y  yes, this once
   a  always: commands starting `pytest` whose options do
      not write files, run programs or reach the network
      (those still ask), for this session
   s  always, and save the rule in .kimi/config.toml for
      later sessions
   n  no, and tell kimi why (Enter)
 esc  cancel the whole turn (or Ctrl-C)"""


def test_the_approval_layout_wraps_by_words_at_60_columns() -> None:
    view = approval_view("pytest -q tests/x.py", "pytest")
    assert render(view.renderable, 60) == APPROVAL_60
    assert view.keys == {"y": "yes", "a": "always", "s": "save", "n": "no"}
    assert view.prompt == "y/a/s/n · Enter = no › "


def test_a_chained_command_is_not_offered_as_a_prefix_rule_and_says_why() -> None:
    view = approval_view("git status --short && echo chained", "")
    shown = " ".join(render(view.renderable, 60).split())
    assert "a chain of 2 commands" in shown and "always" not in view.keys.values()


def _status(**kw: object) -> SessionStatus:
    status = SessionStatus("kimi-k3.1-pro", "moonshot", 1_048_576, "bwrap", K31)
    status.effort = "effort high"
    for key, value in kw.items():
        setattr(status, key, value)
    return status


def steady(line: str) -> str:
    return re.sub("[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]", "*", line)


def test_before_the_first_prompt_the_status_prices_the_packed_context() -> None:
    status = _status(pack_tokens=303_000)
    assert status.line(120) == "kimi-k3.1-pro (effort high) · pack 303k tokens ≈$0.606 ($0.061 cached) · sandbox bwrap"
    assert status.line(60) == "pack 303k tokens ≈$0.606 ($0.061 cached)"  # the model's name goes first
    status.mode = "⏸ plan mode"
    assert status.line(60) == "⏸ plan mode · pack 303k tokens ≈$0.606 ($0.061 cached)"


def test_during_a_turn_the_status_shows_time_tokens_cost_and_how_to_interrupt() -> None:
    status = _status()
    status.begin_turn()
    status.add({"prompt_tokens": 12_345, "completion_tokens": 456, "cached_tokens": 10_000})
    assert steady(status.line(120)) == "* thinking 0:00 · ↑12.3k ↓456 · $0.011 · esc to interrupt"
    assert steady(status.line(60)) == "* thinking 0:00 · ↑12.3k ↓456 · $0.011 · esc to interrupt"
    assert steady(status.line(40)) == "* thinking 0:00 · esc to interrupt"  # whole segments dropped, none cut
    status.phase = "running Shell"
    assert steady(status.line(120)) == "* running Shell 0:00 · ↑12.3k ↓456 · $0.011 · esc to interrupt"
    assert steady(status.line(56)) == "* Shell 0:00 · ↑12.3k ↓456 · $0.011 · esc to interrupt"  # short forms first


def test_a_model_without_a_price_says_so() -> None:
    status = SessionStatus("my-local-model", "openai", 32_768, "bwrap", Rates(0.0, 0.0, 0.0, "unknown"))
    status.add({"prompt_tokens": 1000, "completion_tokens": 10})
    assert "no price" in status.line(120) and "$" not in status.line(120)
