"""Coder subagents with `isolation: "worktree"` (the Agent tool's argument, or a custom kind's front matter): each
works in its own worktree and branch, merged back into the parent checkout with real git when it ends. Two that
edit different functions of one file both land; two that edit the same line give the parent a conflict result
with the hunks, and the parent's resolution lands."""

from __future__ import annotations

import json
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import git, run_kimi, tool_call

TWO = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a + b\n"


def two_functions(repo: Path) -> None:
    (repo / "calc.py").write_text(TWO)
    git(repo, "commit", "-qam", "two functions, both wrong")


def coder(task: str, old: str, new: str, call_id: str) -> list[dict]:
    edit = {"path": "calc.py", "edit": {"old": old, "new": new}}
    return [
        {"match": task, "hang": 0.5, "tool_calls": [tool_call("StrReplaceFile", edit, call_id)]},
        {"match": task, "text": f"{task}: done"},
    ]


def agent(task: str, call_id: str, isolated: bool = True) -> dict:
    args = {"task": task, "kind": "coder", **({"isolation": "worktree"} if isolated else {})}
    return tool_call("Agent", args, call_id)


def test_two_coders_on_different_functions_of_one_file_both_land(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    two_functions(repo)
    server.add({"match": "fix both", "tool_calls": [agent("fix add", "a1"), agent("fix sub", "a2")]})
    server.add(*coder("fix add", "return a - b", "return a + b", "e1"))
    server.add(*coder("fix sub", "return a + b", "return a - b", "e2"))
    server.add({"match": "fix both", "text": "both fixed"})
    proc = run_kimi(["-p", "fix both functions", "--yolo", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "calc.py").read_text() == TWO.replace("a - b", "X").replace("a + b", "a - b").replace("X", "a + b")
    reports = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert all("were merged into this checkout" in r for r in reports), reports
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "worktree", "list").count("\n") == 1  # the subagents' worktrees are gone
    assert git(repo, "for-each-ref", "refs/heads/kimi/") == ""


def test_two_coders_on_the_same_line_give_the_parent_a_conflict_it_resolves(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    resolved = "def add(a, b):\n    return a + b  # resolved\n"
    server.add(
        {"match": "fix add twice", "tool_calls": [agent("fix add one way", "a1"), agent("fix add another way", "a2")]}
    )
    server.add(*coder("fix add one way", "return a - b", "return a + b", "e1"))
    server.add(*coder("fix add another way", "return a - b", "return b + a", "e2"))
    server.add(
        {"match": "fix add twice", "tool_calls": [tool_call("WriteFile", {"path": "calc.py", "content": resolved})]},
        {"match": "fix add twice", "tool_calls": [tool_call("Git", {"command": "add", "paths": ["calc.py"]}, "g1")]},
        {"match": "fix add twice", "tool_calls": [tool_call("Git", {"command": "commit", "message": "resolve"}, "g2")]},
        {"match": "fix add twice", "text": "resolved"},
    )  # fmt: skip
    who = {f"GIT_{r}_{k}": v for r in ("AUTHOR", "COMMITTER") for k, v in (("NAME", "U"), ("EMAIL", "u@example.com"))}
    proc = run_kimi(["-p", "fix add twice", "--yolo", "--output-format", "json"], repo, {**env, **who}, server)
    assert proc.returncode == 0, proc.stderr
    after_agents = next(r for r in server.requests if any(m.get("tool_call_id") == "a2" for m in r["messages"]))
    reports = [m["content"] for m in after_agents["messages"] if m["role"] == "tool"]
    assert sum("were merged into this checkout" in r for r in reports) == 1, reports
    conflict = next(r for r in reports if "CONFLICT" in r)
    assert "conflicted in calc.py" in conflict and "<<<<<<<" in conflict and ">>>>>>>" in conflict
    assert (repo / "calc.py").read_text() == resolved
    assert git(repo, "status", "--porcelain") == "", [m.get("content") for m in server.requests[-1]["messages"][-4:]]
    assert len(git(repo, "log", "-1", "--format=%P").split()) == 2  # the resolution is the merge commit
    assert git(repo, "log", "-1", "--format=%s").strip().startswith("resolve")


def test_a_custom_kind_with_worktree_isolation_works_in_its_own_worktree(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    (repo / ".kimi" / "agents").mkdir(parents=True)
    (repo / ".kimi" / "agents" / "fixer.md").write_text("---\nname: fixer\nisolation: worktree\n---\nFix it.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "a fixer")
    marker = "pwd > where.txt && echo ok"
    server.add(
        {"match": "delegate", "tool_calls": [tool_call("Agent", {"task": "fix in place", "kind": "fixer"}, "a")]},
        {"match": "fix in place", "tool_calls": [tool_call("Shell", {"command": marker}, "s")]},
        {"match": "fix in place", "text": "fixed"},
        {"match": "delegate", "text": "done"},
    )
    proc = run_kimi(["-p", "delegate", "--yolo", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    where = (repo / "where.txt").read_text().strip()  # merged back from the worktree it was written in
    assert "repo.worktrees/agent-" in where, where
    report = next(m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool")
    assert "were merged" in report and json.loads(proc.stdout.splitlines()[-1])["reason"] == "done"
