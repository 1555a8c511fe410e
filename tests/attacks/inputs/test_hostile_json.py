"""Hostile JSON through whole `kimi -p` runs: a final answer 1,100 arrays deep, an output schema whose `$ref`
loops (a repository may ship one for its CI), and tool arguments 1,000 arrays deep each end the run with
its JSON result, no traceback, and the session closed; the legitimate versions still work."""

from __future__ import annotations

import json
from pathlib import Path

from terminal import Terminal

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call, tool_results


def nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def schema_file(tmp_path: Path, schema: object) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    return path


def session_statuses(home: Path) -> list[str]:
    return [json.loads(meta.read_text())["status"] for meta in (home / ".kimi" / "sessions").rglob("meta.json")]


def assert_clean_json_end(proc: object) -> dict:
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr  # type: ignore[attr-defined]
    return result_json(proc)  # type: ignore[arg-type]


def test_a_final_answer_1100_arrays_deep_is_a_mismatch_with_a_json_result(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.add({"text": nested(1100)}, {"text": nested(1100)})
    args = ["-p", "answer", "--output-schema", str(schema_file(tmp_path, {"type": "array"})), "--output-format", "json"]
    proc = run_kimi(args, repo, env, server)
    result = assert_clean_json_end(proc)
    assert proc.returncode == 1 and result["reason"] == "schema_mismatch"
    assert "nested deeper than 64 levels" in result["message"]
    assert "nested deeper than 64 levels" in server.requests[1]["messages"][-1]["content"]  # the model was told
    assert "running" not in session_statuses(home)


def test_a_schema_whose_ref_loops_is_a_usage_error_before_any_request(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    looping = [{"$ref": "#"}, {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}]
    for schema in looping:
        args = ["-p", "x", "--output-schema", str(schema_file(tmp_path, schema)), "--output-format", "json"]
        proc = run_kimi(args, repo, env, server)
        result = assert_clean_json_end(proc)
        assert proc.returncode == 2 and result["error"]["type"] == "usage", result
        assert "a $ref loop never reads into the value" in result["message"]
    deep = tmp_path / "deep.json"
    deep.write_text("{" + '"not":{' * 1100 + "}" * 1101)
    proc = run_kimi(["-p", "x", "--output-schema", str(deep)], repo, env, server)
    assert proc.returncode == 2 and "nested deeper than 64 levels" in proc.stderr and "Traceback" not in proc.stderr
    assert server.requests == []


def test_tool_arguments_1000_arrays_deep_are_a_tool_error_and_the_run_goes_on(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("ReadFile", nested(1000), "deep")]}, {"text": "recovered"})
    proc = run_kimi(["-p", "read", "--output-format", "json"], repo, env, server)
    result = assert_clean_json_end(proc)
    assert proc.returncode == 0 and result["text"] == "recovered"
    (answer,) = tool_results(server, 1)
    assert "nested deeper than 64 levels" in answer
    assert session_statuses(home) == ["done"]


def test_tool_arguments_1000_arrays_deep_leave_the_terminal_running(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("ReadFile", nested(1000), "deep")]}, {"text": "recovered"})
    term = Terminal.start(repo, env, server)
    try:
        term.wait_for("❯")
        term.line("read it")
        term.wait_for("recovered")
        assert term.exit() == 0
    finally:
        term.close()
    assert "Traceback" not in term.transcript and "RecursionError" not in term.transcript


# --- legitimate uses ---------------------------------------------------------------------------------------


def test_a_recursive_tree_schema_and_a_nested_answer_still_work(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    children = {"type": "array", "items": {"$ref": "#"}}
    tree = {"type": "object", "required": ["name", "children"],
            "properties": {"name": {"type": "string"}, "children": children}}  # fmt: skip
    answer: dict = {"name": "leaf", "children": []}
    for level in range(20):
        answer = {"name": f"level {level}", "children": [answer]}
    server.add({"text": json.dumps(answer)})
    args = ["-p", "the tree", "--output-schema", str(schema_file(tmp_path, tree)), "--output-format", "json"]
    proc = run_kimi(args, repo, env, server)
    result = assert_clean_json_end(proc)
    assert proc.returncode == 0 and result["structured_output"] == answer


def test_nested_tool_arguments_within_the_bound_still_run(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    todos = {"todos": [{"title": "write the parser", "status": "in_progress"}, {"title": "test", "status": "pending"}]}
    server.add({"tool_calls": [tool_call("SetTodoList", todos, "todo")]}, {"text": "planned"})
    proc = run_kimi(["-p", "plan", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0 and assert_clean_json_end(proc)["text"] == "planned"
    assert "error" not in tool_results(server, 1)[0].lower()
