"""A session's change to the workspace, from its checkpoints (kimi_cli.session.undo.checkpointer): the tree
before its first step that ran a tool, to the tree after its last one (an undo's tree included). For the -p
result's `files_changed`, `kimi -p --patch FILE` and `kimi diff [SESSION]`. A resumed session is one session:
its change runs from the first run's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kimi_cli.session.undo.points import undo_state
from kimi_cli.session.undo.shadow import ShadowRepo

STATUS_WORDS = {"A": "added", "D": "deleted", "M": "modified", "T": "type-changed"}


@dataclass(frozen=True)
class Span:
    start: str  # the tree before the session's first checkpointed step
    end: str  # the tree after its last one


def span(records: list[dict[str, Any]]) -> Span | None:
    """None when no step of the session was checkpointed (it ran no tool, or its snapshots failed)."""
    first = next((r for r in records if r.get("kind") == "checkpoint" and r.get("phase") == "before"), None)
    last = undo_state(records).last_after
    if first is None or last is None:
        return None
    return Span(str(first["tree"]), last)


def changed_files(shadow: ShadowRepo, where: Span | None) -> list[dict[str, Any]]:
    """Each changed path: its status (added, deleted, modified) and lines added and removed (null: binary)."""
    if where is None or where.start == where.end:
        return []
    stats = shadow.numstat(where.start, where.end)
    return [
        {"path": c.path, "status": STATUS_WORDS.get(c.status, c.status), "added": stats.get(c.path, (0, 0))[0],
         "removed": stats.get(c.path, (0, 0))[1]}
        for c in shadow.changes(where.start, where.end)
    ]  # fmt: skip


def patch(shadow: ShadowRepo, where: Span | None) -> bytes:
    """The whole change as a patch for `git apply` (paths from the workspace's root); empty when none."""
    if where is None or where.start == where.end:
        return b""
    return shadow.patch(where.start, where.end)


def session_records(workspace: Path, session_id: str | None) -> tuple[str, list[dict[str, Any]]]:
    """(the id, the log) of this workspace's session `session_id` (or its start), the latest when None; read
    only: the session is not opened for writing."""
    from kimi_cli.errors import ConfigError
    from kimi_cli.session.store import LOG_NAME, list_sessions, read_records, resolve_id
    from kimi_cli.util.paths import sessions_dir

    if session_id is None:
        infos = list_sessions(workspace)
        if not infos:
            raise ConfigError("no session in this workspace yet; give a session id (kimi sessions lists them)")
        session_id = infos[0].id
    else:
        session_id = resolve_id(workspace, session_id)
    return session_id, read_records(sessions_dir(workspace) / session_id / LOG_NAME)
