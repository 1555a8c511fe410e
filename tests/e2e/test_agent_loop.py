"""The loop's contract: bad model output goes back as tool results; budgets and loop guard stop runs."""

from __future__ import annotations

import json
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call, tool_results


def test_bad_json_unknown_tool_and_missing_arg_go_back_to_the_model(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(
        {
            "tool_calls": [
                {"id": "a", "name": "ReadFile", "arguments": '{"path": "calc.py"'},
                {"id": "b", "name": "DeleteEverything", "arguments": {}},
                {"id": "c", "name": "ReadFile", "arguments": {}},
                {"id": "d", "name": "ReadFile", "arguments": {"path": "../../etc/passwd"}},
            ]
        },
        {"text": "recovered"},
    )
    proc = run_kimi(["-p", "go", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    results = tool_results(server, 1)
    assert "not valid JSON" in results[0]
    assert "unknown tool 'DeleteEverything'" in results[1] and "ReadFile" in results[1]
    assert "path" in results[2] and "Field required" in results[2]
    assert "outside the workspace" in results[3]
    assert result_json(proc)["text"] == "recovered"


def test_max_steps_exits_3(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(*[{"tool_calls": [tool_call("Glob", {"pattern": f"*{i}"}, f"g{i}")]} for i in range(5)])
    proc = run_kimi(["-p", "loop", "--max-steps", "3", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 3
    assert result_json(proc)["reason"] == "max_steps"
    assert len(server.requests) == 3


def test_token_budget_exits_3(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    usage = {"prompt_tokens": 600, "completion_tokens": 10}
    server.add(*[{"tool_calls": [tool_call("Glob", {"pattern": f"*{i}"}, f"g{i}")], "usage": usage} for i in range(5)])
    proc = run_kimi(["-p", "loop", "--max-tokens", "1000", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 3
    assert result_json(proc)["reason"] == "token_budget"
    assert len(server.requests) == 2


def test_image_part_from_read_media_file_follows_the_tool_results(
    repo: Path, env: dict, server: ScriptedModelServer, png_bytes: bytes
) -> None:
    (repo / "shot.png").write_bytes(png_bytes)
    server.add({"tool_calls": [tool_call("ReadMediaFile", {"path": "shot.png"}, "m0")]}, {"text": "seen"})
    proc = run_kimi(["-p", "look", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    last = server.requests[1]["messages"][-1]
    assert last["role"] == "user"
    assert last["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_todo_list_is_shown_as_a_checklist(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    todos = {"todos": [{"title": "read", "status": "done"}, {"title": "fix", "status": "in_progress"}]}
    server.add({"tool_calls": [tool_call("SetTodoList", todos, "t0")]}, {"text": "ok"})
    proc = run_kimi(["-p", "plan", "--output-format", "stream-json"], repo, env, server)
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["output"].splitlines()[1:] == ["[x] read", "[~] fix"]
    assert result["display"]["kind"] == "todos"
