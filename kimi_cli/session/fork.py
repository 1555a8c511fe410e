"""Forking a session: a new session with the same history and the same undo points, under a new id.

The fork is a copy of the session's folder (its log, with every checkpoint record, and what else the
session keeps there) with its own meta; the checkpoint trees live in the workspace's shadow repository and
are shared, so undo in the fork restores the same snapshots. Nothing of the original is written: it is
read, not opened, and goes on exactly as it was.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from kimi_cli.errors import ConfigError
from kimi_cli.hostsafe.fs import write_private
from kimi_cli.session.store import LOG_NAME, META_NAME, new_session_id, resolve_id
from kimi_cli.util.jsonsafe import dumps
from kimi_cli.util.paths import PRIVATE_DIR, sessions_dir


def fork_session(workspace: Path, session_id: str) -> str:
    """Copy the session `session_id` (or the only one starting with it) to a new id; returns the new id."""
    source_id = resolve_id(workspace, session_id)
    base = sessions_dir(workspace)
    source = base / source_id
    try:
        meta = json.loads((source / META_NAME).read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"cannot read session {source_id}: {exc}") from None
    new_id = new_session_id()
    while (base / new_id).exists():  # two forks within a second
        time.sleep(0.01)
        new_id = new_session_id()
    target = base / new_id
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(META_NAME))
    target.chmod(PRIVATE_DIR)
    if not (target / LOG_NAME).exists():
        raise ConfigError(f"session {source_id} has no log to fork")
    title = str(meta.get("title") or "")
    meta.update(
        {
            "id": new_id,
            "title": title if title.startswith("fork of ") else f"fork of {title}"[:200],
            "created": time.time(),
            "updated": time.time(),
            "status": "idle",
            "forked_from": source_id,
        }
    )
    meta.pop("pid", None)
    write_private(target / META_NAME, dumps(meta, indent=1))
    return new_id
