"""`kimi --worktree [NAME]`: a session in its own worktree leaves the main checkout as it is, ends with one line
(branch, commits, how to merge or remove it), and `kimi worktree merge` brings the branch in; `kimi worktree
list|remove`; a session resumed with the same --worktree finds its worktree and its session again."""

from __future__ import annotations

from pathlib import Path

from scripted_server import ScriptedModelServer
from support import git, result_json, run_kimi, tool_call

FIX = {"path": "calc.py", "edit": {"old": "return a - b", "new": "return a + b"}}


def test_a_worktree_session_leaves_main_unchanged_and_merge_brings_it_in(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    server.add({"tool_calls": [tool_call("StrReplaceFile", FIX, "e1")]}, {"text": "fixed"})
    proc = run_kimi(["-p", "fix add", "--worktree", "fix-add", "--yolo"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    tree = repo.parent / "repo.worktrees" / "fix-add"
    assert "return a + b" in (tree / "calc.py").read_text()
    assert "return a - b" in (repo / "calc.py").read_text()  # the main checkout is as it was
    assert git(repo, "status", "--porcelain") == "" and git(repo, "rev-parse", "HEAD").strip() == head
    last = proc.stderr.strip().splitlines()[-1]
    assert "worktree fix-add: branch kimi/fix-add" in last and "uncommitted changes" in last
    assert "kimi worktree merge fix-add" in last and "kimi worktree remove fix-add" in last
    listed = run_kimi(["worktree", "list"], repo, env)
    assert listed.stdout.startswith("fix-add\tkimi/fix-add\t")
    merged = run_kimi(["worktree", "merge", "fix-add"], repo, env)
    assert merged.returncode == 0, merged.stderr
    assert "return a + b" in (repo / "calc.py").read_text()
    assert git(repo, "log", "-1", "--format=%s").strip() == "kimi: worktree fix-add"
    removed = run_kimi(["worktree", "remove", "fix-add"], repo, env)
    assert removed.returncode == 0, removed.stderr
    assert not tree.exists() and git(repo, "branch", "--list", "kimi/fix-add") == ""


def test_a_session_resumed_in_its_worktree_finds_it(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "first"}, {"text": "second"})
    first = result_json(run_kimi(["-p", "one", "--worktree", "w1", "--output-format", "json"], repo, env, server))
    again = run_kimi(["-p", "two", "--worktree", "w1", "--continue", "--output-format", "json"], repo, env, server)
    assert result_json(again)["session_id"] == first["session_id"]
    sessions = run_kimi(["sessions"], repo.parent / "repo.worktrees" / "w1", env)
    assert first["session_id"][:8] in sessions.stdout
    assert first["session_id"][:8] not in run_kimi(["sessions"], repo, env).stdout  # per worktree


def test_a_conflicting_merge_is_told_and_left_to_resolve(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"tool_calls": [tool_call("StrReplaceFile", FIX, "e1")]}, {"text": "fixed"})
    assert run_kimi(["-p", "fix", "--worktree", "c1", "--yolo"], repo, env, server).returncode == 0
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    git(repo, "commit", "-qam", "main's own fix")
    merged = run_kimi(["worktree", "merge", "c1"], repo, env)
    assert merged.returncode == 1 and "conflicted in calc.py" in merged.stderr
    assert "<<<<<<<" in (repo / "calc.py").read_text()


def test_worktree_outside_git_is_a_usage_error(tmp_path: Path, env: dict) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = run_kimi(["-p", "x", "--worktree"], plain, env)
    assert proc.returncode == 2 and "not in a git repository" in proc.stderr


def test_undo_in_a_worktree_undoes_its_session_only(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    edits = [{"tool_calls": [tool_call("WriteFile", {"path": "notes.txt", "content": f"step {k}\n"}, f"w{k}")]}
             for k in (1, 2)]  # fmt: skip
    server.add(*edits, {"text": "wrote"})
    assert run_kimi(["-p", "write notes", "--worktree", "u1", "--yolo"], repo, env, server).returncode == 0
    tree = repo.parent / "repo.worktrees" / "u1"
    assert (tree / "notes.txt").read_text() == "step 2\n"
    assert run_kimi(["undo", "1"], repo, env).returncode != 0  # the main checkout has no session to undo
    undo = run_kimi(["undo", "1"], tree, env)  # the last step
    assert undo.returncode == 0, undo.stderr
    assert (tree / "notes.txt").exists(), undo.stdout + undo.stderr
    assert (tree / "notes.txt").read_text() == "step 1\n" and not (repo / "notes.txt").exists()


def test_resume_from_the_main_checkout_finds_the_sessions_worktree(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "first"}, {"text": "second"})
    first = result_json(run_kimi(["-p", "one", "--worktree", "r1", "--output-format", "json"], repo, env, server))
    again = run_kimi(["-p", "two", "--resume", first["session_id"], "--output-format", "json"], repo, env, server)
    assert again.returncode == 0, again.stderr
    assert result_json(again)["session_id"] == first["session_id"] and "is in worktree r1" in again.stderr
    assert "worktree r1: branch kimi/r1" in again.stderr.strip().splitlines()[-1]
