"""The Git tool on real temporary repositories: every command, every refusal, odd repository states."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.git_tool import Git, GitIdentity
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.workspace import Workspace

from support import git

IDENTITY = GitIdentity(name="Kimi Agent", email="kimi@example.com")


def run(root: Path, identity: GitIdentity = IDENTITY, **args: object) -> tuple[str, bool]:
    registry = ToolRegistry([Git(identity)])
    result = asyncio.run(registry.call("Git", json.dumps(args), ToolContext(workspace=Workspace(root))))
    return result.output, result.is_error


def test_status_is_porcelain_with_branch(repo: Path) -> None:
    (repo / "new.txt").write_text("n\n")
    (repo / "calc.py").write_text("changed\n")
    out, err = run(repo, command="status")
    assert not err
    assert out.splitlines() == ["## main", " M calc.py", "?? new.txt"]


def test_diff_has_a_summary_then_the_patch(repo: Path) -> None:
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    out, _ = run(repo, command="diff")
    assert out.splitlines()[0].strip().startswith("calc.py | 2 +-")
    assert "-    return a - b" in out and "+    return a + b" in out
    out, _ = run(repo, command="diff", staged=True)
    assert out == "no differences"


def test_add_commit_log_and_show(repo: Path) -> None:
    (repo / "calc.py").write_text("fixed\n")
    run(repo, command="add", paths=["calc.py"])
    out, err = run(repo, command="commit", message="Fix add")
    assert not err and "Fix add" in out
    log, _ = run(repo, command="log", max_count=5)
    lines = log.splitlines()
    assert len(lines) == 2 and lines[0].endswith("Kimi Agent: Fix add") and lines[1].endswith("Test: initial")
    show, _ = run(repo, command="show")
    assert "Kimi Agent <kimi@example.com>" in show and "+fixed" in show


def test_commit_adds_the_configured_trailer(repo: Path) -> None:
    (repo / "x.txt").write_text("x\n")
    trailer = GitIdentity(name="A", email="a@x", co_author_trailer="Co-authored-by: kimi <kimi@moonshot.ai>")
    run(repo, command="add", all=True)
    run(repo, trailer, command="commit", message="Add x")
    assert git(repo, "log", "-1", "--format=%B").strip().endswith("Co-authored-by: kimi <kimi@moonshot.ai>")


def test_commit_with_nothing_staged_is_explained(repo: Path) -> None:
    out, err = run(repo, command="commit", message="empty")
    assert err and "nothing is staged" in out


def test_commit_with_hooks_is_refused_unless_allowed(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntouch hook-ran\n")
    os.chmod(hook, 0o755)
    (repo / "x.txt").write_text("x\n")
    run(repo, command="add", all=True)
    out, err = run(repo, command="commit", message="x")
    assert err and "pre-commit" in out and "allow_hooks" in out
    allowed = GitIdentity(name="A", email="a@x", allow_hooks=True)
    out, err = run(repo, allowed, command="commit", message="x")
    assert not err and (repo / "hook-ran").exists()


def test_force_is_refused(repo: Path) -> None:
    out, err = run(repo, command="switch", name="main", force=True)
    assert err and "refused" in out


@pytest.mark.parametrize("command", ["push", "reset", "clean"])
def test_commands_outside_the_contract_do_not_exist(repo: Path, command: str) -> None:
    out, err = run(repo, command=command)
    assert err and "invalid arguments" in out


def test_branch_create_switch_and_delete_rules(repo: Path) -> None:
    out, err = run(repo, command="switch", name="feature", create=True)
    assert not err and out.startswith("## feature")
    out, err = run(repo, command="branch", name="feature", delete=True)
    assert err and "current branch" in out
    (repo / "f.txt").write_text("f\n")
    run(repo, command="add", all=True)
    run(repo, command="commit", message="feature work")
    run(repo, command="switch", name="main")
    out, err = run(repo, command="branch", name="feature", delete=True)
    assert err and "not fully merged" in out  # git -d protects unmerged work; -D is never used
    out, _ = run(repo, command="branch")
    assert "feature" in out and "* main" in out


def test_restore_worktree_and_unstage(repo: Path) -> None:
    (repo / "calc.py").write_text("oops\n")
    run(repo, command="add", paths=["calc.py"])
    out, _ = run(repo, command="restore", paths=["calc.py"], staged=True)
    assert " M calc.py" in out.splitlines()
    run(repo, command="restore", paths=["calc.py"])
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"


def test_paths_and_revisions_are_checked(repo: Path, tmp_path: Path) -> None:
    out, err = run(repo, command="add", paths=["../outside"])
    assert err and "outside the workspace" in out
    out, err = run(repo, command="log", rev="--output=/tmp/pwned")
    assert err and "invalid revision" in out
    out, err = run(repo, command="switch", name="bad..name", create=True)
    assert err and "invalid branch name" in out


def test_empty_repository_behaves(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    assert run(root, command="log") == ("no commits yet", False)
    assert run(root, command="show") == ("no commits yet", False)
    out, err = run(root, command="status")
    assert not err and out.startswith("## No commits yet on main")
    (root / "first.txt").write_text("1\n")
    run(root, command="add", all=True)
    out, err = run(root, command="commit", message="first")
    assert not err and "first" in out


def test_detached_head_behaves(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    out, err = run(repo, command="status")
    assert not err and out.startswith("## HEAD (no branch)")
    (repo / "d.txt").write_text("d\n")
    run(repo, command="add", all=True)
    out, err = run(repo, command="commit", message="on detached head")
    assert not err
    assert run(repo, command="log", max_count=1)[0].endswith("on detached head")


def test_outside_a_repository_it_says_so(tmp_path: Path) -> None:
    out, err = run(tmp_path, command="status")
    assert err and "not a git repository" in out
