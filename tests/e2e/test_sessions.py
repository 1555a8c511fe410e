"""Sessions: the JSONL log survives SIGKILL, --continue/--resume send the history back, `kimi sessions` lists."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from kimi_cli.session.history import INTERRUPTED, repair_history

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable, result_json, run_kimi, tool_call, wait_until


def _session_logs(home: Path) -> list[Path]:
    return sorted((home / ".kimi" / "sessions").glob("*/*/context.jsonl"))


def test_sigkill_mid_step_then_continue_resumes_with_history(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    write = tool_call("WriteFile", {"path": "notes.txt", "content": "step one\n"}, "WriteFile:0")
    server.add({"tool_calls": [write]}, {"hang": 20, "text": "never delivered"})
    full_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    proc = subprocess.Popen(
        [*kimi_executable(), "-p", "write notes", "--output-format", "json"],
        cwd=repo,
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wait_until(lambda: len(server.requests) >= 2, timeout=30, what="the second step")
    assert len(server.requests) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert (repo / "notes.txt").read_text() == "step one\n"

    server.add({"text": "resumed and finished"})
    done = run_kimi(["-p", "go on", "--continue", "--output-format", "json"], repo, env, server)
    assert done.returncode == 0, done.stderr
    assert result_json(done)["text"] == "resumed and finished"
    history = server.requests[2]["messages"]
    assert [m["role"] for m in history] == ["system", "user", "assistant", "tool", "user"]
    assert history[1]["content"] == "write notes"
    assert history[2]["tool_calls"][0]["id"] == "WriteFile:0"
    assert history[3]["tool_call_id"] == "WriteFile:0"
    assert history[4]["content"] == "go on"
    assert len(_session_logs(home)) == 1  # the same session went on


def test_torn_last_line_is_tolerated_on_resume(repo: Path, env: dict, home: Path, server: ScriptedModelServer) -> None:
    server.add({"text": "first"})
    first = run_kimi(["-p", "one", "--output-format", "json"], repo, env, server)
    sid = result_json(first)["session_id"]
    with _session_logs(home)[0].open("a") as fh:
        fh.write('{"kind": "message", "message": {"role": "assi')
    server.add({"text": "second"})
    second = run_kimi(["-p", "two", "--resume", sid, "--output-format", "json"], repo, env, server)
    assert second.returncode == 0, second.stderr
    roles = [m["role"] for m in server.requests[1]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


def test_sessions_command_lists_newest_first(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "a"}, {"text": "b"})
    a = result_json(run_kimi(["-p", "task alpha", "--output-format", "json"], repo, env, server))["session_id"]
    b = result_json(run_kimi(["-p", "task beta", "--output-format", "json"], repo, env, server))["session_id"]
    listing = run_kimi(["sessions"], repo, env).stdout.splitlines()
    assert listing[0].startswith(b) and "task beta" in listing[0]
    assert listing[1].startswith(a)


def test_resume_unknown_id_is_a_usage_error(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    proc = run_kimi(["-p", "x", "--resume", "nope"], repo, env, server)
    assert proc.returncode == 2 and "kimi sessions" in proc.stderr


def test_continue_without_a_session_starts_one_and_says_so(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "fresh"})
    proc = run_kimi(["-p", "x", "--continue", "--output-format", "stream-json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("no earlier session in this workspace to continue: starting a new one") == 1
    init = json.loads(proc.stdout.splitlines()[0])
    assert init["type"] == "init" and init["resumed"] is False
    assert "Continue the task" not in json.dumps(server.requests[0]["messages"])  # the task itself, no resume note
    server.add({"text": "again"})
    proc = run_kimi(["-p", "y", "--continue"], repo, env, server)  # now there is one: it goes on in it
    assert proc.returncode == 0 and "starting a new one" not in proc.stderr
    assert "x" in [m.get("content") for m in server.requests[1]["messages"] if m["role"] == "user"]


def test_the_effort_chosen_is_kept_on_continue(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    k3 = {**env, "KIMI_MODEL": "kimi-k3.1-pro"}  # takes reasoning_effort
    server.add({"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"})
    assert run_kimi(["-p", "a", "--effort", "low"], repo, k3, server).returncode == 0
    assert server.requests[0]["reasoning_effort"] == "low"
    assert run_kimi(["-p", "b", "--continue"], repo, k3, server).returncode == 0
    assert server.requests[1]["reasoning_effort"] == "low"  # kept, not the headless default (max)
    assert run_kimi(["-p", "c", "--continue", "--effort", "high"], repo, k3, server).returncode == 0
    assert server.requests[2]["reasoning_effort"] == "high"  # a new choice wins, and is kept in turn
    assert run_kimi(["-p", "d", "--continue"], repo, k3, server).returncode == 0
    assert server.requests[3]["reasoning_effort"] == "high"


def test_repair_adds_interrupted_results_and_drops_orphans() -> None:
    calls = [
        {"id": "a", "type": "function", "function": {"name": "Shell", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "Shell", "arguments": "{}"}},
    ]
    history = [
        {"role": "user", "content": "t"},
        {"role": "tool", "tool_call_id": "zzz", "content": "orphan"},
        {"role": "assistant", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
    ]
    repaired = repair_history(history)
    assert [m.get("tool_call_id") for m in repaired if m["role"] == "tool"] == ["a", "b"]
    assert repaired[-1]["content"] == INTERRUPTED


@pytest.mark.parametrize("cols", [60, 120])
def test_interactive_continue_with_no_session_starts_one_and_says_so(
    repo: Path, env: dict, server: ScriptedModelServer, cols: int
) -> None:
    from terminal import finish, spawn

    term = spawn(repo, env, server, "-c", cols=cols)  # it reaches the prompt: no exit 2
    assert "no earlier session in this workspace to continue" in " ".join(term.transcript.split())
    server.add({"text": "hello back"})
    term.line("hello")
    term.wait_for("hello back")
    assert finish(term) == 0
    server.add({"text": "still here"})
    again = run_kimi(["-p", "more", "--continue"], repo, env, server)  # the session it started is the latest
    assert again.returncode == 0 and "starting a new one" not in again.stderr
