"""Slash commands and tool output in a real terminal: the `/` menu with descriptions as you type, /model
against the server's /v1/models, /tasks ID, /web, folded output with Ctrl-O and /last at 60 and 120
columns, and a scripted session whose screen holds no Python repr, traceback or internal wording."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from terminal import Terminal

from scripted_server import ScriptedModelServer
from support import tool_call

REPR = re.compile(r"\{'|\[\{|\bNone\b|Traceback|Unknown child process|returncode 255")


def spawn(repo: Path, env: dict, server: ScriptedModelServer, *args: str, cols: int = 120) -> Terminal:
    term = Terminal.start(repo, env, server, *args, cols=cols)
    term.wait_for("❯")
    return term


def test_slash_opens_a_menu_with_descriptions_as_you_type(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    user_commands = Path(env["HOME"]) / ".kimi" / "commands"
    user_commands.mkdir(parents=True)
    (user_commands / "standup.md").write_text("---\ndescription: summarise yesterday's commits\n---\nSummarise.\n")
    term = spawn(repo, env, server)
    try:
        term.send("/")  # no Tab: the menu opens on `/`
        screen = term.wait_for("the commands and keys")
        assert "/help" in screen and "/resume" in screen
        term.send("st")
        screen = term.wait_for("/standup")
        assert "summarise yesterday's commits" in screen  # a user's own command completes like a built-in
        term.send("\x15")  # Ctrl-U
        term.send("/mo")
        assert "show the server's models, or switch to one" in term.wait_for("/model")
        term.send("\x15")
        term.send("/he")
        term.wait_for("/help")
        term.send("\r")  # Enter on the menu runs the first match
        term.wait_for("the hooks that run at session events")  # /help ran
        assert term.exit() == 0
    finally:
        term.close()


def test_model_lists_the_servers_models_and_warns_on_an_unknown_one(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    term = spawn(repo, env, server)
    try:
        term.line("/model")
        assert "the server offers: kimi-test" in term.wait_for("the server offers")
        term.line("/model no-such-model")
        term.wait_for("does not list 'no-such-model' (it offers: kimi-test)")
        term.wait_for("anyway? y/N (Enter = no)")
        term.send("n")  # one key, no Enter
        term.wait_for("model unchanged")
        term.line("/model kimi-test")  # listed: no question
        term.wait_for("model: kimi-test")
        assert term.exit() == 0
    finally:
        term.close()
    assert "anyway?" not in term.transcript.split("/model kimi-test")[-1]


@pytest.mark.parametrize("cols", [60, 120])
def test_long_output_is_folded_and_ctrl_o_or_last_shows_all_of_it(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "seq 1 3000"}, "s1")]},
        {"tool_calls": [tool_call("Shell", {"command": "python3 -c \"print('y' * 5000)\""}, "s2")]},
        {"text": "looked"},
    )
    term = spawn(repo, env, server, "--yolo", cols=cols)
    try:
        term.line("show me")
        term.wait_for("looked")
        shown = term.scrollback
        assert re.search(r"… 2,99\d lines hidden \(ctrl-o shows all\) …", shown) and "1500" not in shown
        assert re.search(r"y{10,} …\+[\d,]+ chars", shown)
        assert all(len(line) <= cols for line in shown.splitlines())
        assert max(len(line) for line in shown.splitlines()) > cols - 10  # clipped at the width, not before
        term.send("\x0f")  # Ctrl-O: the last call's whole output, in the pager (cat here)
        term.wait_for_output("y" * 4000)
        term.settle()
        term.line("/last")
        term.wait_count("y" * 4000, 2)
        assert term.exit() == 0
    finally:
        term.close()


def test_tasks_id_shows_a_tasks_output_and_web_speaks_plainly(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "echo from-the-task; sleep 30", "background": True}, "b1")]},
        {"text": "started it"},
    )
    term = spawn(repo, env, server, "--yolo")
    try:
        term.line("start it")
        term.wait_for("started it")
        assert "started task-1 in the background" in term.scrollback and "exit None" not in term.transcript
        term.line("/tasks")
        term.wait_for("/tasks ID shows one's output")
        term.line("/tasks task-1")
        term.wait_for("from-the-task")
        term.line("/tasks task-9")
        term.wait_for("no background task 'task-9'")
        term.line("/web off")
        term.wait_for("web fetching is off")
        assert term.exit() == 0
    finally:
        term.close()
    assert "prompt cache" not in term.transcript


def test_a_scripted_session_shows_no_repr_traceback_or_internal_words(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    (repo / "notes.md").write_text("# notes\n" + "line\n" * 50)
    todos = [{"title": "read the code", "status": "done"}, {"title": "fix add()", "status": "in_progress"}]
    read, edit = tool_call("ReadFile", {"path": "calc.py"}, "r1"), {"old": "a - b", "new": "a + b"}
    glob = tool_call("Glob", {"pattern": "*.md"}, "f1")
    server.add(
        {"reasoning": "plan first", "tool_calls": [tool_call("SetTodoList", {"todos": todos}, "t1")]},
        {"tool_calls": [read, tool_call("Grep", {"pattern": "def"}, "g1"), glob]},
        {"tool_calls": [tool_call("StrReplaceFile", {"path": "calc.py", "edit": edit}, "e1")]},
        {"tool_calls": [tool_call("Shell", {"command": "sleep 20", "background": True}, "b1")]},
        {"tool_calls": [tool_call("Git", {"command": "status"}, "g2")]},
        {"tool_calls": [tool_call("ReadFile", {"path": "missing.py"}, "m1")]},
        {"text": "Fixed **add**."},
    )
    term = spawn(repo, env, server, "--yolo", cols=60)
    try:
        term.line("/reasoning")
        term.line("fix add")
        term.wait_for("Fixed add.")
        screen = term.settle()
        assert term.exit() == 0
    finally:
        term.close()
    shown = term.scrollback
    assert not REPR.search(shown), REPR.search(shown)
    for expected in ("Plan: 2 items, 1 done, 1 in progress", "read 2 lines", "matching line", "1 file",
                     "Edit calc.py", "started task-1 in the background", "git status"):  # fmt: skip
        assert expected in " ".join(shown.split()), (expected, screen)


def test_undo_restores_files(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(
        {"tool_calls": [tool_call("WriteFile", {"path": "made.txt", "content": "x\n"}, "w1")]}, {"text": "wrote it"}
    )
    term = spawn(repo, env, server)
    try:
        term.line("write a file")
        term.wait_for("wrote it")
        assert (repo / "made.txt").exists()
        term.line("/undo")
        term.wait_for("restored the files")
        assert term.exit() == 0
    finally:
        term.close()
    assert not (repo / "made.txt").exists()


def test_image_command_and_a_pasted_path_attach_to_the_next_message(
    repo: Path, env: dict, server: ScriptedModelServer, png_bytes: bytes
) -> None:
    (repo / "shot.png").write_bytes(png_bytes)
    (repo / "pasted.png").write_bytes(png_bytes)
    server.add({"text": "nice picture"}, {"text": "got the picture"})
    term = spawn(repo, env, server)
    try:
        term.line("/image shot.png")
        term.wait_for("attached shot.png")
        term.line("what is this?")
        term.wait_for("nice picture")
        term.line(f"'{repo / 'pasted.png'}'")
        term.wait_for("attached pasted.png")
        term.line("and this?")
        term.wait_for("got the picture")
        assert term.exit() == 0
    finally:
        term.close()
    assert server.requests[0]["messages"][-1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert server.requests[1]["messages"][-1]["content"][1]["type"] == "image_url"
