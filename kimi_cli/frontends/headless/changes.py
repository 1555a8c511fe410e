"""What a headless run's session changed: the result's `files_changed` (path, status, lines added and
removed) and `--patch FILE`, the whole change as a patch `git apply` takes (kimi_cli.session.undo.session_diff:
from the session's first checkpoint to its last; a resumed session's change runs from its first run)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def change_fields(runtime: Any, patch_path: Path | None) -> dict[str, Any]:
    from kimi_cli.session.undo.session_diff import changed_files, patch, span
    from kimi_cli.session.undo.shadow import CheckpointError, ShadowRepo

    out: dict[str, Any] = {"files_changed": []}
    data = b""
    try:
        where = span(runtime.session.records())
        if where is not None:
            shadow = ShadowRepo(runtime.workdir)
            out["files_changed"] = changed_files(shadow, where)
            if patch_path is not None:
                data = patch(shadow, where)
    except CheckpointError as exc:  # the result still goes out; the change is what it could not read
        out["files_changed_error"] = str(exc)
    if patch_path is not None:
        out["patch"] = write_patch(patch_path, data)
    return out


def write_patch(path: Path, data: bytes) -> dict[str, Any]:
    """Written atomically, never through a link at that name; an empty file when nothing changed."""
    from kimi_cli.hostsafe.fs import rooted, write_atomic_at

    target = path.expanduser().absolute()
    try:
        with rooted(target.parent) as folder:
            write_atomic_at(folder, target.name, data)
    except OSError as exc:
        return {"path": str(target), "bytes": 0, "error": f"cannot write the patch: {exc.strerror or exc}"}
    return {"path": str(target), "bytes": len(data), "error": None}
