"""Folders outside the workspace that ReadFile may read, and nothing else there: the user's own skill
folders (kimi_cli.extensions.skills). The session lists them in `ToolContext.read_roots` as (folder as the model
is told it, folder on disk) pairs; a path inside one is opened below the folder on disk through the
no-follow reader, so neither `..` nor a link leads anywhere else. No other tool reads them."""

from __future__ import annotations

import os
from pathlib import Path


def granted(roots: list[tuple[str, Path]], path: str) -> tuple[Path, str] | None:
    """(root on disk, path inside it) when `path` lies in one of `roots`; None otherwise."""
    if not roots or not path:
        return None
    expanded = os.path.expanduser(path)
    if not os.path.isabs(expanded) or ".." in Path(expanded).parts:
        return None
    candidate = os.path.normpath(expanded)
    for shown, real in roots:
        for base in (os.path.normpath(shown), str(real)):
            if candidate.startswith(base.rstrip("/") + "/"):
                return Path(real), candidate[len(base.rstrip("/")) + 1 :]
    return None
