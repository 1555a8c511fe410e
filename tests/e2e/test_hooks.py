"""Hooks end to end: `kimi -p` against the scripted server, hooks configured as a user writes them.

A Claude Code guard script runs unchanged; approve, modify and timeout work through the real process; a
project's hooks run only once the folder is trusted; a workspace script a hook runs cannot be swapped.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import TESTS_DIR, processes_with, run_kimi, tool_call, tool_results, trust_folder, wait_until

FIXTURES = TESTS_DIR / "fixtures" / "hooks"
PY = sys.executable


def user_hooks(home: Path, toml: str) -> None:
    config = home / ".kimi" / "config.toml"
    config.write_text(config.read_text() + "\n" + toml)


def hook_log(tmp_path: Path) -> list[dict]:
    log = tmp_path / "hook.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_a_claude_code_guard_blocks_rm_rf_unchanged_and_other_commands_run(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    user_hooks(home, f'[[hooks.PreToolUse]]\nmatcher = "Bash"\ncommand = "{PY} {FIXTURES / "block_rm_rf.py"}"\n')
    (repo / "build").mkdir()
    (repo / "build" / "keep.txt").write_text("x")
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "rm -rf build"}, "s1")]},
        {"tool_calls": [tool_call("Shell", {"command": "ls build"}, "s2")]},
        {"text": "left build alone"},
    )
    proc = run_kimi(["-p", "clean up"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "rm -rf is not allowed here" in tool_results(server, 1)[-1]
    assert (repo / "build" / "keep.txt").exists()
    assert "keep.txt" in tool_results(server, 2)[-1]  # the guard lets the harmless command through


def test_a_hook_that_allows_skips_the_approval_and_others_still_need_it(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    user_hooks(home, f'[[hooks.PreToolUse]]\nmatcher = "Shell"\ncommand = "{PY} {FIXTURES / "allow_echo.py"}"\n')
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "echo approved-by-hook"}, "e1")]},
        {"tool_calls": [tool_call("Shell", {"command": "touch unasked.txt"}, "t1")]},
        {"text": "done"},
    )
    # --sandbox none: a headless run refuses every command it cannot ask about, unless something approves it
    proc = run_kimi(["-p", "go", "--sandbox", "none"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "approved-by-hook" in tool_results(server, 1)[-1]
    assert "needs approval" in tool_results(server, 2)[-1] and not (repo / "unasked.txt").exists()


def test_a_hook_can_rewrite_the_input(repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path):
    answer = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                                "updatedInput": {"command": "echo rewritten"}}})  # fmt: skip
    script = tmp_path / "rewrite.sh"
    script.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{answer}'\n")
    script.chmod(0o755)
    user_hooks(home, f'[[hooks.PreToolUse]]\nmatcher = "Shell"\ncommand = "{script}"\n')
    server.add({"tool_calls": [tool_call("Shell", {"command": "echo original"}, "e1")]}, {"text": "ok"})
    proc = run_kimi(["-p", "go"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    result = tool_results(server, 1)[-1]
    assert "rewritten" in result and "original" not in result


def test_a_hook_past_its_timeout_is_killed_reported_and_the_session_goes_on(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    marker = f"kimi-hook-sleeper-{tmp_path.name}"
    sleeper = f"{PY} -c 'import time; time.sleep(120)' {marker}"
    pre = f'[[hooks.PreToolUse]]\ncommand = "{sleeper}"\ntimeout = 1\n'
    user_hooks(home, pre + f'[[hooks.UserPromptSubmit]]\ncommand = "{sleeper}"\ntimeout = 1\non_failure = "block"\n')
    server.add({"tool_calls": [tool_call("Shell", {"command": "echo still-ran"}, "e1")]}, {"text": "ok"})
    proc = run_kimi(["-p", "go"], repo, env, server, timeout=100)
    # the prompt hook says on_failure = block: its timeout blocks the prompt, and nothing is sent
    assert proc.returncode == 4 and "timed out after 1 s" in proc.stderr and not server.requests
    wait_until(lambda: not processes_with(marker), what="the timed-out hook's processes to be gone")
    user_hooks(home, "")
    config = home / ".kimi" / "config.toml"
    config.write_text(config.read_text().replace('on_failure = "block"\n', ""))
    proc = run_kimi(["-p", "go"], repo, env, server, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert "timed out after 1 s" in proc.stderr and "still-ran" in tool_results(server, 1)[-1]


def test_project_hooks_run_only_in_a_trusted_folder(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    (repo / ".kimi").mkdir()
    (repo / ".kimi" / "config.toml").write_text(
        f'[[hooks.UserPromptSubmit]]\ncommand = "{PY} {FIXTURES / "record.py"} print project-hook-ran"\n'
    )
    env = {**env, "HOOK_LOG": str(tmp_path / "hook.log")}
    server.add({"text": "one"}, {"text": "two"})
    proc = run_kimi(["-p", "hello"], repo, env, server)
    assert proc.returncode == 0 and hook_log(tmp_path) == []
    assert "hooks" in proc.stderr and "not trusted" in proc.stderr  # told what was ignored
    trust_folder(repo, home)
    proc = run_kimi(["-p", "hello"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert [e["hook_event_name"] for e in hook_log(tmp_path)] == ["UserPromptSubmit"]
    assert "project-hook-ran" in json.dumps(server.requests[1]["messages"])


def test_a_workspace_script_a_hook_runs_cannot_be_swapped_during_the_session(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    (repo / "hooks").mkdir()
    guard = repo / "hooks" / "guard.sh"
    guard.write_text(f"#!/bin/sh\ncat > /dev/null\necho ran >> {tmp_path / 'guard-ran'}\n")
    guard.chmod(0o755)
    user_hooks(home, '[[hooks.PreToolUse]]\nmatcher = "Shell"\ncommand = "sh hooks/guard.sh"\n')
    pwned = tmp_path / "pwned"
    evil = f"#!/bin/sh\ntouch {pwned}\n"
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "echo first"}, "a")]},
        {"tool_calls": [tool_call("WriteFile", {"path": "hooks/guard.sh", "content": evil}, "w")]},
        {"tool_calls": [tool_call("Shell", {"command": "echo second"}, "b")]},
        {"text": "ok"},
    )
    proc = run_kimi(["-p", "go"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "first" in tool_results(server, 1)[-1]  # the script as the session found it runs
    assert (tmp_path / "guard-ran").read_text() == "ran\n"
    assert not pwned.exists()  # the rewritten script never ran on the host
    assert "changed since the session started" in tool_results(server, 3)[-1]


# --- hooks written for Claude Code, in its own settings files -------------------------------------------------


def claude_settings(path: Path, hooks: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": {"allow": []}, "hooks": hooks}))


def claude_hook(matcher: str, *args: str, timeout: int = 30) -> list:
    command = shlex.join([PY, str(FIXTURES / "record.py"), *args])
    return [{"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": timeout}]}]


def test_a_projects_claude_code_hooks_run_once_trusted_and_see_claude_codes_tool_shapes(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    """`.claude/settings.json` hooks are the project's: ignored (and named) until the folder is trusted, then
    run with Claude Code's tool names and inputs: `Bash`, `Edit` with an absolute file_path, old_string."""
    claude_settings(repo / ".claude" / "settings.json", {
        "PreToolUse": claude_hook("Bash", "exit", "2", "no curl here") + claude_hook("Edit|Write"),
    })  # fmt: skip
    (repo / "app.py").write_text("x = 1\n")
    env = {**env, "HOOK_LOG": str(tmp_path / "hook.log")}
    server.add({"tool_calls": [tool_call("Shell", {"command": "echo untrusted-ran"}, "a")]}, {"text": "one"})
    proc = run_kimi(["-p", "go"], repo, env, server)
    assert proc.returncode == 0 and hook_log(tmp_path) == []
    assert "claude.hooks" in proc.stderr and "not trusted" in proc.stderr  # told what was ignored
    assert "untrusted-ran" in tool_results(server, 1)[-1]

    trust_folder(repo, home)
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "echo blocked-ran", "timeout": 9}, "b")]},
        {"tool_calls": [tool_call("StrReplaceFile", {"path": "app.py", "edit": {"old": "x = 1", "new": "x = 2"}},
                                  "e")]},
        {"text": "two"},
    )  # fmt: skip
    proc = run_kimi(["-p", "go"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "no curl here" in tool_results(server, 3)[-1]  # exit 2 blocked the Bash call with its stderr
    assert "blocked-ran" not in tool_results(server, 3)[-1]
    assert (repo / "app.py").read_text() == "x = 2\n"  # the Edit hook let the edit through
    bash, edit = hook_log(tmp_path)
    assert bash["tool_name"] == "Bash" and bash["tool_input"] == {"command": "echo blocked-ran", "timeout": 9000}
    assert edit["tool_name"] == "Edit" and edit["tool_input"] == {
        "file_path": str(repo.resolve() / "app.py"),
        "old_string": "x = 1",
        "new_string": "x = 2",
        "replace_all": False,
    }

    # A rewritten settings file is a new question: its hooks do not run until trusted again.
    claude_settings(repo / ".claude" / "settings.json", {"UserPromptSubmit": claude_hook("", "print", "new-hook")})
    server.add({"text": "three"})
    proc = run_kimi(["-p", "go"], repo, env, server)
    assert proc.returncode == 0 and "not trusted" in proc.stderr and len(hook_log(tmp_path)) == 2


def test_the_users_claude_code_hooks_run_and_an_updated_input_in_claude_codes_shape_is_read_back(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                     "updatedInput": {"file_path": str(repo.resolve() / "made.txt"),
                                                      "content": "from the hook\n"}}}  # fmt: skip
    claude_settings(home / ".claude" / "settings.json", {
        "PreToolUse": claude_hook("Write", "json", json.dumps(answer)),
        "Stop": [{"hooks": [{"type": "prompt", "prompt": "asks a model: not run here"}]}],
    })  # fmt: skip
    env = {**env, "HOOK_LOG": str(tmp_path / "hook.log")}
    server.add(
        {"tool_calls": [tool_call("WriteFile", {"path": "asked.txt", "content": "from the model\n"}, "w")]},
        {"text": "ok"},
    )
    proc = run_kimi(["-p", "go"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "made.txt").read_text() == "from the hook\n" and not (repo / "asked.txt").exists()
    [event] = hook_log(tmp_path)
    assert event["tool_name"] == "Write" and event["tool_input"]["file_path"] == str(repo.resolve() / "asked.txt")
