"""Where kimi keeps its files: ~/.kimi (or $KIMI_HOME) and the per-workspace session folders."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def kimi_home() -> Path:
    """The user's kimi folder: $KIMI_HOME, else ~/.kimi."""
    env = os.environ.get("KIMI_HOME")
    return Path(env).expanduser() if env else Path.home() / ".kimi"


def workspace_key(workspace: Path) -> str:
    """A short stable name for a workspace folder, used to group its sessions."""
    real = str(workspace.resolve())
    digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{Path(real).name or 'root'}-{digest}"


def config_files(workspace: Path) -> list[Path]:
    """The config files that apply to a workspace, lowest precedence first."""
    return [kimi_home() / "config.toml", workspace / ".kimi" / "config.toml"]


def sessions_dir(workspace: Path) -> Path:
    return kimi_home() / "sessions" / workspace_key(workspace)
