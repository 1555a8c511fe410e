"""[status_line] command (issue 46, item 11) in a real terminal at 60 and 120 columns: the user's command is fed
Claude Code's statusLine JSON on stdin and its first line is shown above kimi's status line, escapes written
out; it gets the environment without the API key; a failing command is said once and shows nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from terminal import spawn

from scripted_server import ScriptedModelServer
from support import wait_until

SCRIPT = """import json, os, sys
data = json.load(sys.stdin)
open(sys.argv[1], "a").write(json.dumps({"data": data, "key": "KIMI_API_KEY" in os.environ}) + "\\n")
ctx = data["context_window"]
print(f"<<{data['model']['id']} ctx {ctx['used_tokens']}/{ctx['context_window_size']} \\x1b[31mred>>")
print("SECOND LINE NEVER SHOWN")
"""


@pytest.fixture(autouse=True)
def _kimi_home(env: dict) -> None:
    os.makedirs(Path(env["HOME"]) / ".kimi", exist_ok=True)


def configure(home: Path, command: str) -> None:
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write(f"\n[status_line]\ncommand = {json.dumps(command)}\n")


@pytest.mark.parametrize("cols", [60, 120])
def test_the_commands_first_line_is_shown_fed_the_statusline_json(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, tmp_path: Path, cols: int
) -> None:
    script, record = tmp_path / "status.py", tmp_path / "runs.jsonl"
    script.write_text(SCRIPT)
    configure(home, f"python3 {script} {record}")
    server.add({"text": "an answer", "usage": {"prompt_tokens": 1234, "completion_tokens": 10}})
    term = spawn(repo, env, server, cols=cols)
    try:
        term.wait_for(r"<<\S+ ctx 0/1048576 red>>", regex=True)  # its colour dropped, never obeyed
        term.line("hello")
        term.wait_for("an answer")
        term.wait_for(r"<<\S+ ctx 1244/", regex=True)
        screen = term.display
        assert "SECOND LINE" not in term.transcript
        rows = [line for line in screen.splitlines() if line.strip()]
        assert rows[-2].lstrip().startswith("<<")  # above kimi's own status line
        assert term.exit() == 0
    finally:
        term.close()
    runs = [json.loads(line) for line in record.read_text().splitlines()]
    first = runs[0]["data"]
    assert first["hook_event_name"] == "Status" and first["cwd"] == str(repo)
    assert first["session_id"] and "total_cost_usd" in first["cost"]
    assert not any(run["key"] for run in runs)  # the API key variable never reaches it


def test_a_failing_command_is_said_once_and_the_session_goes_on(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    configure(home, "exit 3")
    server.add({"text": "fine anyway"})
    term = spawn(repo, env, server, cols=60)
    try:
        term.wait_for_output("[status_line] command exited 3")
        term.line("hello")
        term.wait_for("fine anyway")
        assert term.exit() == 0
    finally:
        term.close()
    wait_until(lambda: term.transcript.count("[status_line] command exited 3") == 1)
