"""Host git in the workspace's repository, for callers that want git's answer or nothing: the repository guard
opens the repository (kimi_cli.hostsafe.git.repo_guard), host.py runs the command in it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from kimi_cli.hostsafe.git.host import run_git
from kimi_cli.hostsafe.git.location import UnsafeRepository
from kimi_cli.hostsafe.git.repo_guard import open_repo


def workspace_git(
    workspace: Path, args: Sequence[str], *, timeout: float | None = 120, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes] | None:
    """`git ARGS` in the workspace's repository; None outside git or when the repository is refused."""
    try:
        location = open_repo(workspace)
    except (UnsafeRepository, OSError):
        return None
    if location is None:
        return None
    try:
        return run_git(args, workspace, location, timeout=timeout, input=input)
    except (UnsafeRepository, OSError, subprocess.TimeoutExpired):
        return None
