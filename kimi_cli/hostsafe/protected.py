"""The folders that belong to kimi and the user, never to the model: one table for the sandbox, the file tools
and ACP's editor writes.

`.git/` holds config, hooks and attributes that git (the user's own, and kimi's Git tool) reads and may run
programs from; `.kimi/` holds the project's settings, MCP servers and hooks. A write there by the model
would decide what runs on the host. The sandbox keeps them read-only to commands (sandbox/policy.py mounts
them, sandbox/guard/restore.py puts them back), and every tool that writes a file refuses a path through one of
them, at any depth and in any letter case (a `.GIT` folder means `.git` to git on a case-insensitive
filesystem, and to nothing good on this one). Reads stay allowed: the model may look at `.git/config`.
"""

from __future__ import annotations

import os

GIT_DIR, KIMI_DIR = PROTECTED_NAMES = (".git", ".kimi")
_FOLDED = frozenset(name.casefold() for name in PROTECTED_NAMES)


def protected_part(rel: str | os.PathLike[str]) -> str | None:
    """The first component of a workspace-relative path that is a protected name in any letter case."""
    for part in os.fspath(rel).replace("\\", "/").split("/"):
        if part.casefold() in _FOLDED:
            return part
    return None


def refusal(path: str, part: str) -> str:
    """What the model reads when a write into a protected folder is refused: why, and what to do instead."""
    return (
        f"refused: {path} is inside {part}/, which belongs to the user and kimi, not to the model: what is there "
        "decides what git and kimi run (config, hooks, settings), so the file tools never write or delete there. "
        "Use the Git tool for git operations, or ask the user to make the change."
    )
