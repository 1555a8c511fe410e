"""`kimi sessions --prune`: remove this workspace's sessions not touched for a while.

A session whose process still runs is never removed, whatever its age; nor is a folder that is not a
session (no meta.json). The workspace's undo history (~/.kimi/checkpoints) is shared by its sessions and
stays: its objects are the snapshots of files, not the conversations.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from kimi_cli.session.store import SessionInfo, list_sessions

DAY = 86_400.0


def stale(workspace: Path, older_than_days: float, now: float | None = None) -> list[SessionInfo]:
    """The sessions last updated more than `older_than_days` ago, and not running now."""
    cutoff = (time.time() if now is None else now) - older_than_days * DAY
    return [i for i in list_sessions(workspace) if i.updated < cutoff and i.status != "running"]


def remove(infos: list[SessionInfo], exports: Path | None = None) -> list[str]:
    """Remove each session's folder (and its exports under `exports`); returns the ids removed."""
    removed = []
    for info in infos:
        if not (info.path / "meta.json").is_file() or info.path.is_symlink():
            continue
        shutil.rmtree(info.path, ignore_errors=True)
        if not info.path.exists():
            removed.append(info.id)
        if exports is not None:
            for stale_export in exports.glob(f"{info.id}.*"):
                stale_export.unlink(missing_ok=True)
    return removed
