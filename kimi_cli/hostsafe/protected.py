"""The folders that belong to kimi and the user, never to the model: one table for the sandbox, the file tools
and ACP's editor writes.

`.git/` holds config, hooks and attributes that git (the user's own, and kimi's Git tool) reads and may run
programs from; `.kimi/` holds the project's settings, MCP servers and hooks. A write there by the model
would decide what runs on the host. The sandbox keeps them read-only to commands (policy.py mounts them,
git_guard.py restores them), and every tool that writes a file refuses a path through one of them, at any
depth and in any letter case (a `.GIT` folder means `.git` to git on a case-insensitive filesystem, and to
nothing good on this one). Reads stay allowed: the model may look at `.git/config`.
"""

from __future__ import annotations

import os
from pathlib import Path

PROTECTED_NAMES: tuple[str, ...] = (".git", ".kimi")
_FOLDED = frozenset(name.casefold() for name in PROTECTED_NAMES)


def protected_part(rel: str | os.PathLike[str]) -> str | None:
    """The first component of a workspace-relative path that is a protected name in any letter case."""
    for part in os.fspath(rel).replace("\\", "/").split("/"):
        if part.casefold() in _FOLDED:
            return part
    return None


def below(root: Path, path: Path) -> str | None:
    """`path` relative to `root` as a string, lexically (no link followed); None when it is not below it."""
    text, top = os.path.normpath(path), os.path.normpath(root)
    if text == top:
        return ""
    prefix = top.rstrip("/") + "/"
    return text[len(prefix) :] if text.startswith(prefix) else None


def refusal(path: str, part: str) -> str:
    """What the model reads when a write into a protected folder is refused: why, and what to do instead."""
    return (
        f"refused: {path} is inside {part}/, which belongs to the user and kimi, not to the model: what is there "
        "decides what git and kimi run (config, hooks, settings), so the file tools never write or delete there. "
        "Use the Git tool for git operations, or ask the user to make the change."
    )
