"""kimi tells the user on leaving when a command planted git settings that run programs.

A sandboxed command may `git init` in a folder that is not a repository (or edit a config the sandbox can
write) and set `core.fsmonitor` to a script. kimi's own git never runs it
(tests/attacks/host_git/test_repository_programs.py), but the user's next hand-run `git status` would. kimi
cannot refuse `git init` in Shell without breaking real work, so it says so at the end of the session:
headless on stderr and in the JSON result, interactive on exit. In a sandbox the guard takes such settings out
after each command (tests/attacks/sandbox/ test_repositories_commands_make.py); the warning is what remains
where nothing checks: `--sandbox none`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call

PLANT = 'git init -q && printf "#!/bin/sh\\n" > .fsm && chmod +x .fsm && git config core.fsmonitor "$PWD/.fsm"'
UNSANDBOXED = ["--sandbox", "none", "--yolo"]


def folder(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "notes.txt").write_text("not a repository\n")
    return root


def test_a_planted_fsmonitor_is_named_on_stderr_and_in_the_json_result(
    tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    root = folder(tmp_path)
    server.add({"tool_calls": [tool_call("Shell", {"command": PLANT}, "p1")]}, {"text": "done"})
    proc = run_kimi(["-p", "tidy up", "--output-format", "json", *UNSANDBOXED], root, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "\tfsmonitor = " in (root / ".git" / "config").read_text()  # the plant is real
    result = result_json(proc)
    assert len(result["warnings"]) == 1
    assert "core.fsmonitor" in result["warnings"][0] and ".git/config" in result["warnings"][0]


def test_text_mode_prints_the_warning_on_stderr(tmp_path: Path, env: dict, server: ScriptedModelServer) -> None:
    root = folder(tmp_path)
    server.add({"tool_calls": [tool_call("Shell", {"command": PLANT}, "p1")]}, {"text": "done"})
    proc = run_kimi(["-p", "tidy up", *UNSANDBOXED], root, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "kimi: warning:" in proc.stderr and "core.fsmonitor" in proc.stderr
    assert "core.fsmonitor" not in proc.stdout  # stdout stays the answer


def test_an_ordinary_session_has_no_warning(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": "git status --short && echo ok"}, "s1")]}, {"text": "x"})
    proc = run_kimi(["-p", "look", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["warnings"] == []


def test_settings_present_at_start_are_not_reported_again(
    tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    root = folder(tmp_path)
    subprocess.run(["sh", "-c", PLANT], cwd=root, check=True)  # the user's own repository, as it was
    server.add({"text": "nothing to do"})
    proc = run_kimi(["-p", "look", "--output-format", "json"], root, env, server)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["warnings"] == []
