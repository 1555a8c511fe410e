"""The hidden-path table (hidden_paths.txt, one data file for every backend) and its expansion.

Each entry is a path or a glob; `~` is the home the command sees. Only what exists is returned: bwrap
needs a target to mount over, and Landlock only needs to know what not to grant.
"""

from __future__ import annotations

import glob
import os
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("hidden_paths.txt")


@lru_cache(maxsize=1)
def default_entries() -> tuple[str, ...]:
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))


def expand(entries: list[str] | tuple[str, ...], home: Path) -> list[Path]:
    """The existing paths the entries name, symlinks resolved (a dotfiles link hides its target)."""
    found: dict[str, Path] = {}
    for raw in entries:
        entry = str(home) + raw[1:] if raw == "~" or raw.startswith("~/") else raw
        magic = any(c in entry for c in "*?[")
        matches = glob.glob(entry, include_hidden=True) if magic else [entry] if os.path.lexists(entry) else []
        for match in matches:
            path = Path(os.path.realpath(match)) if os.path.islink(match) else Path(match)
            if path.exists():
                found.setdefault(str(path), path)
    return list(found.values())
