"""End to end: the real `kimi -p` against the scripted server fixes a bug in a real git repo."""

from __future__ import annotations

from pathlib import Path

from scripted_server import ScriptedModelServer
from support import TEST_KEY, result_json, run_kimi, tool_call


def fix_script() -> list[dict]:
    return [
        {
            "reasoning": "I should look at calc.py first.",
            "tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "ReadFile:0")],
            "usage": {"prompt_tokens": 900, "completion_tokens": 20, "cached_tokens": 0},
        },
        {
            "reasoning": "The subtraction is the bug.",
            "tool_calls": [
                tool_call(
                    "StrReplaceFile",
                    {"path": "calc.py", "edit": {"old": "return a - b", "new": "return a + b"}},
                    "functions.StrReplaceFile:1",
                )
            ],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 30, "cached_tokens": 896},
            "usage_style": "moonshot",
        },
        {
            "text": "Fixed `add`: it subtracted instead of adding.",
            "usage": {"prompt_tokens": 1100, "completion_tokens": 12, "cached_tokens": 1000},
        },
    ]


def test_headless_run_fixes_the_bug_and_reports_json(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(*fix_script())
    proc = run_kimi(["-p", "fix add() in calc.py", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    result = result_json(proc)
    assert result["reason"] == "done"
    assert result["text"] == "Fixed `add`: it subtracted instead of adding."
    assert result["steps"] == 3
    assert result["usage"]["prompt_tokens"] == 3000
    assert result["usage"]["cached_tokens"] == 1896  # both usage styles were read
    assert result["session_id"]


def test_requests_carry_reasoning_back_and_omit_blank_content(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(*fix_script())
    proc = run_kimi(["-p", "fix add() in calc.py", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    second = server.requests[1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    assert assistant["reasoning_content"] == "I should look at calc.py first."
    assert "content" not in assistant
    assert assistant["tool_calls"][0]["id"] == "ReadFile:0"
    tool_msg = next(m for m in second if m["role"] == "tool")
    assert tool_msg["tool_call_id"] == "ReadFile:0"
    assert "return a - b" in tool_msg["content"]
    third = server.requests[2]["messages"]
    assert [m for m in third if m["role"] == "tool"][-1]["tool_call_id"] == "functions.StrReplaceFile:1"


def test_requests_carry_a_workspace_prompt_cache_key_and_typed_schemas(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "nothing to do"})
    proc = run_kimi(["-p", "hello", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    body = server.requests[0]
    # per workspace and pack, not per session (tests/e2e/test_model_api.py checks two sessions share it)
    assert body["prompt_cache_key"].startswith("kimi-") and body["prompt_cache_key"] != result_json(proc)["session_id"]
    assert body["stream"] is True
    for tool in body["tools"]:
        props = tool["function"]["parameters"]["properties"]
        assert all("type" in p for p in props.values()), tool["function"]["name"]


def test_text_mode_prints_answer_on_stdout_and_progress_on_stderr(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(*fix_script())
    proc = run_kimi(["-p", "fix add() in calc.py"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Fixed `add`: it subtracted instead of adding."
    assert "StrReplaceFile" in proc.stderr


def test_stream_json_emits_one_event_per_line(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(*fix_script())
    proc = run_kimi(["-p", "fix it", "--output-format", "stream-json"], repo, env, server)
    import json

    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    steps = [t for t in types if t != "notice"]  # the start notices (withheld variables) come right after init
    assert types[0] == "init" and steps[1] == "step_begin" and types[-1] == "result"  # the headless contract
    assert {"text_delta", "reasoning_delta", "tool_call", "tool_result", "usage", "step_end"} <= set(types)


def test_task_can_come_from_stdin(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "ok"})
    proc = run_kimi(["--output-format", "json"], repo, env, server, input="say ok\n")
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0]["messages"][-1] == {"role": "user", "content": "say ok"}


def test_api_key_never_reaches_output_or_session_files(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    server.add({"error": 401, "body": {"error": {"message": f"bad key {TEST_KEY}"}}})
    proc = run_kimi(["-p", "hi", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 2
    server.add({"text": "done"})
    proc2 = run_kimi(["-p", "hi", "--output-format", "stream-json"], repo, env, server)
    assert proc2.returncode == 0
    assert server.headers[0]["authorization"] == f"Bearer {TEST_KEY}"  # it did go to the server
    everything = proc.stdout + proc.stderr + proc2.stdout + proc2.stderr
    for path in (home / ".kimi").rglob("*"):
        if path.is_file():
            everything += path.read_text(errors="replace")
    assert TEST_KEY not in everything
