"""Editor writes (`fs/write_text_file`) stay out of the folders that decide what runs on the host.

`.git/` holds config, hooks and attributes that the Git tool and checkpoints read; `.kimi/` holds the
project's config, MCP servers and hooks. A write there through the editor would bypass the sandbox's
read-only `.git` and the folder-trust check, so it is refused like a path outside the workspace.
"""

from __future__ import annotations

from pathlib import Path

from kimi_cli.hostsafe.protected import protected_part, refusal
from kimi_cli.kernel.contain import below
from kimi_cli.tools.errors import ToolError


def check_editor_write(root: Path, path: Path) -> None:
    """Raise ToolError for a path outside `root` or inside a protected folder (any case, any depth)."""
    root = root.resolve()
    target = path if path.is_absolute() else root / path
    rel = below(root, target.resolve())
    if rel is None:
        raise ToolError(f"refused: {path} is outside the workspace {root}")
    part = protected_part(rel)  # the table the file tools and the sandbox share
    if part is not None:
        raise ToolError(refusal(str(path), part))
