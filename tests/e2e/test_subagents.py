"""Subagents: fresh context, report only, concurrency, usage roll-up, no nesting, custom kinds."""

from __future__ import annotations

import json
import re
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import git, processes_with, result_json, run_kimi, tool_call, wait_until


def setup_dirs(repo: Path) -> None:
    for d in ("a", "b", "c"):
        (repo / d).mkdir()
        (repo / d / "mod.py").write_text("def old_name():\n    return 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "dirs")


def sub_script(d: str, delay: float) -> list[dict]:
    task = f"rename old_name to new_name in {d}/"
    edit = {"path": f"{d}/mod.py", "edit": {"old": "old_name", "new": "new_name"}}
    return [
        {"match": task, "hang": delay, "tool_calls": [tool_call("StrReplaceFile", edit, f"e-{d}")],
         "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        {"match": task, "hang": delay, "text": f"renamed in {d}/mod.py line 1",
         "usage": {"prompt_tokens": 120, "completion_tokens": 10}},
    ]  # fmt: skip


def test_three_coder_subagents_run_at_once_and_only_their_reports_come_back(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    setup_dirs(repo)
    calls = [tool_call("Agent", {"task": f"rename old_name to new_name in {d}/", "kind": "coder"}, f"ag-{d}")
             for d in ("a", "b", "c")]  # fmt: skip
    server.add(
        {"match": "split the rename", "tool_calls": calls, "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
    )
    for d in ("a", "b", "c"):
        server.add(*sub_script(d, 1.0))
    server.add({"match": "split the rename", "text": "all three renamed",
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}})  # fmt: skip
    proc = run_kimi(["-p", "split the rename across a, b and c", "--output-format", "stream-json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert all((repo / d / "mod.py").read_text().startswith("def new_name") for d in ("a", "b", "c"))
    step = next(e for e in events if e["type"] == "step_end" and e["step"] == 1)
    assert step["tools_ms"] < 5000, step  # one after another would take at least 3 x 2 x 1 s
    parent = server.requests[-1]["messages"]
    reports = [m["content"] for m in parent if m["role"] == "tool"]
    assert reports == [f"renamed in {d}/mod.py line 1" for d in ("a", "b", "c")]
    assert not any("StrReplaceFile" in json.dumps(m) for m in parent if m["role"] == "assistant" and
                   m.get("tool_calls") and m["tool_calls"][0]["function"]["name"] != "Agent")  # fmt: skip
    sub_first = next(r for r in server.requests if "rename old_name to new_name in a/" in json.dumps(r["messages"][1]))
    assert [m["role"] for m in sub_first["messages"]] == ["system", "user"]  # a fresh context
    assert "Agent" not in [t["function"]["name"] for t in sub_first["tools"]]  # no nesting
    assert events[-1]["usage"]["prompt_tokens"] == 10 + 10 + 3 * (100 + 120)  # rolled up


def test_an_explore_subagent_gets_read_only_tools_and_custom_kinds_load(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    (repo / ".kimi" / "agents").mkdir(parents=True)
    (repo / ".kimi" / "agents" / "auditor.md").write_text(
        "---\nname: auditor\ndescription: checks things\ntools: [ReadFile, Grep]\n---\nBe strict.\n"
    )
    server.add(
        {"match": "study", "tool_calls": [tool_call("Agent", {"task": "explain calc", "kind": "explore"}, "x"),
                                          tool_call("Agent", {"task": "audit calc", "kind": "auditor"}, "y")]},
        {"match": "explain calc", "text": "calc adds"},
        {"match": "audit calc", "text": "calc subtracts"},
        {"match": "study", "text": "studied"},
    )  # fmt: skip
    proc = run_kimi(["-p", "study the code", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["text"] == "studied"
    explore = next(r for r in server.requests if "explain calc" in json.dumps(r["messages"][1]))
    names = {t["function"]["name"] for t in explore["tools"]}
    assert "ReadFile" in names and "Shell" not in names and "WriteFile" not in names
    auditor = next(r for r in server.requests if "audit calc" in json.dumps(r["messages"][1]))
    assert {t["function"]["name"] for t in auditor["tools"]} == {"ReadFile", "Grep"}
    assert "Be strict." in auditor["messages"][0]["content"]


def test_a_coder_subagents_edit_shows_in_the_parents_change_note(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    edit = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}
    sub_task = "make add() in calc.py add"
    server.add(
        {"match": "fix the sign", "tool_calls": [tool_call("Agent", {"task": sub_task, "kind": "coder"}, "ag")]},
        {"match": sub_task, "tool_calls": [tool_call("StrReplaceFile", edit, "e1")]},
        {"match": sub_task, "text": "fixed calc.py line 2"},
        {"match": "fix the sign", "text": "done"},
    )
    proc = run_kimi(["-p", "fix the sign in calc.py", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    parent = server.requests[-1]["messages"]
    # packed in full, so the note can show the new text
    assert re.search(r"<file-\w+ path=\"calc\.py\">", parent[0]["content"])
    note = parent[-1]
    assert note["role"] == "user" and note["content"].startswith("[kimi] Files changed"), note
    assert "calc.py" in note["content"] and "a + b" in note["content"]


def test_sigterm_stops_running_subagents_and_their_commands(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    import signal
    import subprocess

    from support import TEST_KEY, kimi_executable

    server.add(
        {"match": "long job", "tool_calls": [tool_call("Agent", {"task": "wait a while", "kind": "coder"}, "a")]},
        {"match": "wait a while", "tool_calls": [tool_call("Shell", {"command": "sleep 96.5", "timeout": 300}, "s")]},
    )
    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    proc = subprocess.Popen([*kimi_executable(), "-p", "a long job"], cwd=repo, env=full,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    wait_until(lambda: processes_with("sleep 96.5"), timeout=30, what="the subagent's command")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 4
    wait_until(lambda: processes_with("sleep 96.5") == [], what="the subagent's command to be gone")
