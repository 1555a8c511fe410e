"""Workspace files a hook command names are pinned: a hook runs on the host, so the script it starts must be
the one the user agreed to, not one a sandboxed command (or a file tool) rewrote a moment ago.

A hook's command is split as the shell would; each word that names a file inside the workspace (relative,
or under $CLAUDE_PROJECT_DIR / $KIMI_PROJECT_DIR) is read through the no-follow reader and its digest kept.
Before each run the digests are compared; a changed or vanished script is not run (the caller blocks). The
digests also go into the folder's trust digest (kimi_cli.trust), so a script changed between sessions asks
for trust again.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from pathlib import Path

PROJECT_VARS = re.compile(r"\$\{?(CLAUDE_PROJECT_DIR|KIMI_PROJECT_DIR)\}?")
MAX_SCRIPT_BYTES = 4 * 1024 * 1024


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def named_files(command: str, workdir: Path) -> list[str]:
    """Workspace-relative paths of the files the command names that exist in the workspace."""
    root = workdir.resolve()
    found: list[str] = []
    for word in _words(command):
        word = PROJECT_VARS.sub(str(root), word)
        if not word or word.startswith("-") or "=" in word.split("/")[0]:
            continue
        path = Path(os.path.normpath(word if os.path.isabs(word) else root / word))
        if path == root or not path.is_relative_to(root):
            continue
        rel = str(path.relative_to(root))
        if rel not in found and os.path.lexists(path) and not os.path.isdir(path):
            found.append(rel)
    return found


def digest(workdir: Path, rel: str) -> str:
    """sha256 of the file as the no-follow reader sees it; an unreadable one (a link) has a stable marker."""
    from kimi_cli.tools import safe_fs

    try:
        data = safe_fs.read_bytes(workdir.resolve(), rel, MAX_SCRIPT_BYTES + 1)
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    return hashlib.sha256(data).hexdigest()


def pin(command: str, workdir: Path) -> dict[str, str]:
    return {rel: digest(workdir, rel) for rel in named_files(command, workdir)}


def changed(pins: dict[str, str], workdir: Path) -> list[str]:
    """The pinned files that are no longer what they were."""
    return [rel for rel, was in pins.items() if digest(workdir, rel) != was]


def widenings(folder: Path) -> list[tuple[str, object, str]]:
    """For kimi_cli.trust: the scripts the project's own hooks name (.kimi and .claude), with their digests
    (key, value, words)."""
    from kimi_cli.hooks.claude import project_hooks
    from kimi_cli.hooks.config import _table, hooks_from

    hooks = hooks_from(_table(folder / ".kimi" / "config.toml"), "project") + project_hooks(folder)
    scripts: dict[str, str] = {}
    for hook in hooks:
        scripts.update(pin(hook.command, folder))
    if not scripts:
        return []
    names = ", ".join(sorted(scripts))
    return [("hooks.scripts", dict(sorted(scripts.items())), f"run these workspace scripts as hooks: {names}")]
