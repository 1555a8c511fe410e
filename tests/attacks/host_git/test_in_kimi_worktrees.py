"""Host git and the sandbox inside the linked worktrees kimi makes (kimi_cli.worktrees): the attacks that fail in a
plain repository fail there too.

A kimi worktree's `.git` is a FILE naming `<main>/.git/worktrees/<name>`, whose `commondir` leads to `<main>/.git`
and whose `gitdir` names the checkout back. That layout, and nothing else, is accepted:
- the worktree's `.git` file rewritten to name another repository, after the start: refused;
- its admin folder's `commondir` redirected to another repository: refused;
- a folder that copies a worktree's `.git` file (its admin folder names another checkout): refused;
- programs planted in the repository's config and hooks: no host git kimi runs for the worktree (the Git tool,
  committing an attempt, merging it) runs them;
- a sandboxed command in the worktree writes its checkout, and neither the main checkout, nor the main
  repository's `.git`, nor the worktree's admin folder.
Each beside the legitimate use: the Git tool commits on the worktree's branch; kimi merges it into main.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sandbox_fixtures import backends, local_shell

from kimi_cli.hostsafe.git.location import UnsafeRepository
from kimi_cli.hostsafe.git.repo_guard import open_repo, remember_session_start
from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.git_tool import Git, GitIdentity
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.shell import Shell
from kimi_cli.tools.workspace import Workspace
from kimi_cli.worktrees import trees

from support import git, plain_git, ran

IDENTITY = GitIdentity(name="Kimi Agent", email="kimi@example.com")
GIT_BACKENDS = [b for b in backends() if b in ("bwrap", "landlock")]
CHANGING = [
    {"command": "status"},
    {"command": "add", "all": True},
    {"command": "commit", "message": "kimi was here"},
    {"command": "branch", "name": "kimi-branch"},
    {"command": "switch", "name": "kimi-switch", "create": True},
]


def tool(root: Path, **args: object) -> tuple[str, bool]:
    registry = ToolRegistry([Git(IDENTITY)])
    result = asyncio.run(registry.call("Git", json.dumps(args), ToolContext(workspace=Workspace(root))))
    return result.output, result.is_error


def other_repository(tmp_path: Path) -> Path:
    other = tmp_path / "other-project"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    (other / "app.py").write_text("print('other')\n")
    git(other, "add", ".")
    git(other, "commit", "-q", "-m", "other's work")
    return other / ".git"


def state(git_dir: Path) -> tuple[str, str, int]:
    refs = "".join(sorted(p.read_text() for p in (git_dir / "refs").rglob("*") if p.is_file()))
    index = (git_dir / "index").read_bytes().hex() if (git_dir / "index").is_file() else ""
    return refs, index, sum(1 for p in (git_dir / "objects").rglob("*") if p.is_file())


def admin(repo: Path, tree: trees.Worktree) -> Path:
    return Path((tree.path / ".git").read_text().split(":", 1)[1].strip())


# --- the legitimate use -----------------------------------------------------------------------------------


def test_the_git_tool_commits_on_the_worktrees_branch_and_kimi_merges_it(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    tree = trees.create(repo, "legit")
    remember_session_start(tree.path)
    (tree.path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    assert tool(tree.path, command="add", all=True)[1] is False
    out, err = tool(tree.path, command="commit", message="fix add")
    assert not err, out
    assert git(repo, "rev-parse", "HEAD").strip() == head  # main untouched
    assert git(repo, "log", "-1", "--format=%s", tree.branch).strip().startswith("fix add")
    assert trees.merge(repo, tree.branch).merged
    assert "a + b" in (repo / "calc.py").read_text()


# --- the attacks ------------------------------------------------------------------------------------------


def test_a_worktree_gitfile_rewritten_to_another_repository_is_refused(tmp_path: Path, repo: Path) -> None:
    other = other_repository(tmp_path)
    before = state(other)
    tree = trees.create(repo, "swapped")
    remember_session_start(tree.path)
    (tree.path / ".git").write_text(f"gitdir: {other}\n")  # what a command on a backend that could would write
    with pytest.raises(UnsafeRepository):
        open_repo(tree.path)
    for args in CHANGING:
        assert tool(tree.path, **args)[1], args
    with pytest.raises(Exception, match="refused"):
        trees.commit_pending(tree, "attempt")
    assert state(other) == before


def test_a_redirected_commondir_of_a_worktree_is_refused(tmp_path: Path, repo: Path) -> None:
    other = other_repository(tmp_path)
    before = state(other)
    tree = trees.create(repo, "common")
    remember_session_start(tree.path)
    (admin(repo, tree) / "commondir").write_text(f"{other}\n")
    with pytest.raises(UnsafeRepository):
        open_repo(tree.path)
    for args in CHANGING:
        assert tool(tree.path, **args)[1], args
    assert state(other) == before


def test_a_copied_worktree_gitfile_in_another_folder_is_refused(tmp_path: Path, repo: Path) -> None:
    """The admin folder's gitdir names the real worktree back, not this folder: git would change that
    checkout's index and branch."""
    tree = trees.create(repo, "real")
    before = state(repo / ".git")
    impostor = tmp_path / "downloaded"
    impostor.mkdir()
    (impostor / ".git").write_text((tree.path / ".git").read_text())
    (impostor / "calc.py").write_text("stolen = True\n")
    remember_session_start(impostor)
    with pytest.raises(UnsafeRepository, match="gitdir file names"):
        open_repo(impostor)
    for args in CHANGING:
        assert tool(impostor, **args)[1], args
    assert state(repo / ".git") == before


def test_programs_planted_in_the_repository_never_run_for_a_worktree(tmp_path: Path, repo: Path) -> None:
    marks = tmp_path / "marks"
    plant = tmp_path / "plant"
    plant.write_text(f'#!/bin/sh\necho "$(basename "$0")" >> {marks}\ncat >/dev/null 2>&1\nexit 0\n')
    plant.chmod(0o755)
    tree = trees.create(repo, "planted")
    git(repo, "config", "core.fsmonitor", str(plant))
    git(repo, "config", "filter.evil.clean", str(plant))
    (tree.path / ".gitattributes").write_text("*.py filter=evil\n")
    for hook in ("pre-commit", "post-commit", "post-merge", "post-checkout", "reference-transaction"):
        (repo / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\necho hook-{hook} >> {marks}\n")
        (repo / ".git" / "hooks" / hook).chmod(0o755)
    remember_session_start(tree.path)
    (tree.path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    assert not tool(tree.path, command="status")[1]
    trees.commit_pending(tree, "attempt")  # what kimi does with an attempt's checkout
    assert trees.merge(repo, tree.branch).merged
    trees.exit_line(repo, tree)
    assert ran(marks) == []
    plain_git(repo, "status")  # the control: git run by hand runs the plant
    assert ran(marks)


# --- the sandbox in a worktree ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", GIT_BACKENDS)
def test_a_worktrees_sandbox_writes_only_its_own_checkout(tmp_path: Path, repo: Path, backend: str) -> None:
    tree = trees.create(repo, f"sandboxed-{backend}")
    remember_session_start(tree.path)
    box = admin(repo, tree)
    shell = local_shell(tmp_path, tree.path, backend)
    targets = {
        "main checkout": repo / "calc.py",
        "main hooks": repo / ".git" / "hooks" / "post-commit",
        "main config": repo / ".git" / "config",
        "admin folder": box / "commondir",
        "admin gitdir": box / "gitdir",
    }
    before = {name: p.read_bytes() if p.exists() else None for name, p in targets.items()}
    lines = [f"printf 'x' >> '{p}' 2>/dev/null && echo 'WROTE {name}'" for name, p in targets.items()]
    lines.append("echo 'gitdir: /tmp' > .git 2>/dev/null; echo mine > mine.txt && echo WROTE-OWN")
    params = Shell.Params.model_validate({"command": "; ".join(lines)})
    out = asyncio.run(shell.run(params, ToolContext(workspace=Workspace(tree.path)))).output
    assert "WROTE-OWN" in out and (tree.path / "mine.txt").read_text() == "mine\n"
    assert "WROTE " not in out, out
    assert {name: p.read_bytes() if p.exists() else None for name, p in targets.items()} == before
    open_repo(tree.path)  # its .git still names its own admin folder: git still works there
    assert (tree.path / ".git").read_text().startswith(f"gitdir: {box}")
