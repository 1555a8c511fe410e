"""What the agent records about the workspace's git state, and the work branch of a headless run.

All git here runs through kimi_cli.hostsafe.git.host: opening a repository runs none of its programs, and
switching branch runs no post-checkout hook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kimi_cli.errors import ConfigError, KimiError
from kimi_cli.hostsafe.git.host import run_git
from kimi_cli.hostsafe.git.location import RepoLocation, UnsafeRepository
from kimi_cli.hostsafe.git.repo_guard import open_repo


def _git(root: Path, location: RepoLocation, *args: str) -> tuple[int, str, str]:
    try:
        out = run_git(args, root, location, timeout=60)
    except UnsafeRepository as exc:  # `.git` changed since open_repo checked it: git was not run
        return 1, "", str(exc)
    return out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace")


def _open(root: Path) -> RepoLocation | None:
    try:
        return open_repo(root)
    except (UnsafeRepository, OSError):
        return None


def git_state(root: Path) -> dict[str, Any] | None:
    """Branch, HEAD and dirty state at session start; None outside a git repository (or in a bare one, where
    status fails). One git call (with host.py's own check of the config, two processes, not eight): porcelain v2
    with --branch gives the commit and the branch in its header lines, and any other line is a change."""
    location = _open(root)
    if location is None:
        return None
    code, out, _ = _git(root, location, "status", "--porcelain=v2", "--branch")
    if code != 0:
        return None
    branch: str | None = None
    head: str | None = None
    dirty = False
    for line in out.splitlines():
        if line.startswith("# branch.oid "):
            oid = line[len("# branch.oid ") :].strip()
            head = None if oid == "(initial)" else oid
        elif line.startswith("# branch.head "):
            name = line[len("# branch.head ") :].strip()
            branch = None if name == "(detached)" else name
        elif line and not line.startswith("#"):
            dirty = True
    return {"branch": branch, "head": head, "dirty": dirty, "detached": branch is None and head is not None}


def switch_to_work_branch(root: Path, name: str) -> str:
    """Create (from HEAD) or reuse branch `name` and switch to it; uncommitted changes come along."""
    try:
        location = open_repo(root)
    except UnsafeRepository as exc:
        raise ConfigError(f"--branch {name}: {exc}") from None
    if location is None or git_state(root) is None:
        raise ConfigError(f"--branch {name}: the workspace {root} is not a git repository")
    if _git(root, location, "check-ref-format", "--branch", name)[0] != 0:
        raise ConfigError(f"--branch {name}: not a valid branch name")
    exists = _git(root, location, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}")[0] == 0
    code, _, err = _git(root, location, "switch", name) if exists else _git(root, location, "switch", "-c", name)
    if code != 0:
        raise KimiError(f"--branch {name}: git switch failed: {err.strip()}")
    return "switched to existing branch" if exists else "created branch"
