"""What the agent records about the workspace's git state, and the work branch of a headless run."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from kimi_cli.errors import ConfigError, KimiError


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)


def git_state(root: Path) -> dict[str, Any] | None:
    """Branch, HEAD and dirty state at session start; None outside a git repository."""
    if _git(root, "rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        return None
    branch = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD").stdout.strip() or None
    head = _git(root, "rev-parse", "--verify", "--quiet", "HEAD").stdout.strip() or None
    dirty = bool(_git(root, "status", "--porcelain").stdout.strip())
    return {"branch": branch, "head": head, "dirty": dirty, "detached": branch is None and head is not None}


def switch_to_work_branch(root: Path, name: str) -> str:
    """Create (from HEAD) or reuse branch `name` and switch to it; uncommitted changes come along."""
    if git_state(root) is None:
        raise ConfigError(f"--branch {name}: the workspace {root} is not a git repository")
    if _git(root, "check-ref-format", "--branch", name).returncode != 0:
        raise ConfigError(f"--branch {name}: not a valid branch name")
    exists = _git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}").returncode == 0
    out = _git(root, "switch", name) if exists else _git(root, "switch", "-c", name)
    if out.returncode != 0:
        raise KimiError(f"--branch {name}: git switch failed: {out.stderr.strip()}")
    return "switched to existing branch" if exists else "created branch"
