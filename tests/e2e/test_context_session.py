"""The packed repository in a real session: a stable prefix, change notes, prefix reuse, compaction."""

from __future__ import annotations

import json
import re
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call

TASK = "Fix add() in calc.py so that it adds."


def test_system_prompt_holds_the_pack_and_an_outside_edit_becomes_a_note(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "echo '# touched' >> README.md"}, "sh1")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", TASK, "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    first, second = server.requests[0]["messages"], server.requests[1]["messages"]
    assert re.search(r'<file-\w+ path="calc\.py">', first[0]["content"])
    assert second[0] == first[0]  # the prefix is never rewritten
    note = second[-1]
    assert note["role"] == "user" and note["content"].startswith("[kimi] Files changed")
    assert "# touched" in note["content"] and "README.md" in note["content"]


def test_the_agents_own_edits_do_not_produce_notes(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    edit = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}
    server.add(
        {"tool_calls": [tool_call("StrReplaceFile", edit, "e1")]},
        {"tool_calls": [tool_call("Shell", {"command": "true"}, "s2")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", TASK], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert not any("[kimi] Files changed" in str(m.get("content")) for m in server.requests[2]["messages"])


def test_thirty_steps_each_request_strictly_extends_the_last(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    (repo / "lib").mkdir()
    for i in range(30):  # a repository of realistic size (~100k tokens), so the pack is most of each request
        body = "\n".join(f"    total_{n} = item_{i}.value * {n}  # accumulate part {n}" for n in range(300))
        (repo / "lib" / f"part_{i}.py").write_text(f"def part_{i}(item_{i}):\n{body}\n    return total_0\n")
    for i in range(29):
        call = tool_call("ReadFile", {"path": "calc.py", "n_lines": i + 1}, f"r{i}")
        server.add(
            {"text": f"step {i}", "tool_calls": [call], "usage": {"prompt_tokens": 1000 + i, "completion_tokens": 10}}
        )
    server.add({"text": "finished"})
    proc = run_kimi(["-p", TASK, "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["steps"] == 30
    reuse = []
    for prev, cur in zip(server.requests, server.requests[1:], strict=False):
        p, c = prev["messages"], cur["messages"]
        assert c[: len(p)] == p
        prev_text, cur_text = json.dumps(p)[:-1], json.dumps(c)
        assert cur_text.startswith(prev_text)
        reuse.append(len(prev_text) / len(cur_text))
    assert sum(reuse) / len(reuse) >= 0.99


def test_forced_compaction_keeps_the_task_and_valid_pairing(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    server.add(
        {
            "tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")],
            "usage": {"prompt_tokens": 950_000, "completion_tokens": 50},
        },
        {"text": "SUMMARY: calc.py subtracts; the fix is to add."},
        {"text": "fixed after compaction"},
    )
    proc = run_kimi(["-p", TASK, "--output-format", "stream-json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert any(e["type"] == "compacted" for e in events)
    summary_request = server.requests[1]
    assert summary_request["messages"][0]["content"].startswith("You are compacting")
    assert "tools" not in summary_request
    after = server.requests[2]["messages"]
    assert [m["role"] for m in after] == ["system", "user"]
    assert after[1]["content"].startswith(TASK)
    assert "SUMMARY: calc.py subtracts" in after[1]["content"]
    assert re.search(r'<repository-\w+ name="repo"', after[0]["content"])
    log = next((home / ".kimi" / "sessions").glob("*/*/context.jsonl")).read_text()
    assert '"tool_call_id": "r1"' in log  # the session log keeps the full history


def test_compact_at_flag_sets_the_trigger(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(
        {
            "tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")],
            "usage": {"prompt_tokens": 60_000, "completion_tokens": 5},
        },
        {"text": "summary"},
        {"text": "done"},
    )
    proc = run_kimi(["-p", TASK, "--compact-at", "0.05", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert server.requests[1]["messages"][0]["content"].startswith("You are compacting")


def test_no_pack_leaves_the_repository_out(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    (repo / "AGENTS.md").write_text("Always run the tests with pytest -q.\n")
    server.add({"text": "ok"})
    proc = run_kimi(["-p", TASK, "--no-pack"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    system = server.requests[0]["messages"][0]["content"]
    assert "<repository" not in system and "Always run the tests with pytest -q." in system


def test_the_servers_token_count_calibrates_the_estimate(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    server.add({"text": "ok", "usage": {"prompt_tokens": 8000, "completion_tokens": 1}})  # o200k counts ~5k
    proc = run_kimi(["-p", TASK], repo, {**env, "XDG_CACHE_HOME": str(home / "cache")}, server)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((home / "cache" / "kimi" / "calibration.json").read_text())
    factor = data["models"]["kimi-k3.1-pro"]
    assert factor > 1.0 and data["last"] == factor  # the scripted server claimed more tokens than o200k counts
