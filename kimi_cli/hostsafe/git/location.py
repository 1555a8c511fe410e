"""A repository as host git names it: where it was found (RepoLocation), the refusal to run git on it
(UnsafeRepository), and the bounded read of the small files that link its folders.

The lowest of host git's modules: the repository guard finds and checks a RepoLocation, pins and backlinks
check it further, and host.py runs git in it; each imports these from here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_LINK_BYTES = 64 * 1024  # a `.git` file, commondir or gitdir holds one path


class UnsafeRepository(Exception):
    """The repository points somewhere it did not at session start; kimi will not run git on it."""


@dataclass(frozen=True)
class RepoLocation:
    """A repository as found on disk: the work tree, this tree's git dir, the common dir, and where its
    links lead (`kind -> target`) when that is outside the workspace's own `.git` folder.

    `via` says how `.git` led to the git dir ("gitfile", "symlink", or "" for a folder); open_repo adds the
    identities (device, inode) of the git dir and common dir it checked, which each spawn verifies."""

    work_tree: Path
    git_dir: Path
    common_dir: Path
    links: frozenset[str] = frozenset()
    via: str = ""
    workspace: Path | None = None
    git_dir_id: tuple[int, int] | None = None
    common_dir_id: tuple[int, int] | None = None


def read_small(path: Path, limit: int = MAX_LINK_BYTES, follow: bool = True) -> str:
    """The start of a small git file (`.git`, commondir, gitdir, alternates): a command may have made it a
    sparse file of 100 GB, and reading it whole would take kimi's memory with it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    with os.fdopen(os.open(path, flags), "rb") as fh:
        return fh.read(limit).decode(errors="replace")
