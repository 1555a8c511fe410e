"""Where a session's hooks come from, in the order they run: the user's (~/.kimi/config.toml, then Claude
Code's ~/.claude/settings.json), then, in a trusted folder only, the project's (.kimi/config.toml, then
.claude/settings.json and .claude/settings.local.json).

The project's hooks, and the digests of the scripts they name, are never read here: they come from the
snapshot the session's trust decision was made on (kimi_cli.hostsafe.project_settings), so the hooks that run are
exactly those the decision covered. A writer that changes the files meanwhile (a command of another session
in the same folder) cannot slip in a hook or a script nobody trusted; the runner keeps the snapshot's pins.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kimi_cli.extensions.hooks import claude
from kimi_cli.extensions.hooks.config import Hook, _table, hooks_from
from kimi_cli.hostsafe import pins

if TYPE_CHECKING:
    from kimi_cli.hostsafe.trust import FolderTrust

Pinned = dict[Hook, dict[str, str]]


def load_hooks(workdir: Path, folder: FolderTrust | None = None) -> list[Hook]:
    """The user's hooks, then the project's when the folder is trusted (kimi_cli.hostsafe.trust)."""
    return load_pinned(workdir, folder)[0]


def load_pinned(workdir: Path, folder: FolderTrust | None = None) -> tuple[list[Hook], Pinned]:
    """The hooks and, for each, the digests of the workspace scripts it names. The project's come from
    `folder` (the session's trust decision), else from trust.current(workdir)."""
    from kimi_cli.hostsafe import trust
    from kimi_cli.util.paths import kimi_home

    hooks = hooks_from(_table(kimi_home() / "config.toml"), "user") + claude.user_hooks()
    pinned = {hook: pins.pin(hook.command, workdir) for hook in hooks}
    state = folder if folder is not None else trust.current(workdir)
    project = state.project
    theirs = project.kimi_hooks + project.claude_hooks
    if not theirs or not state.applies:
        return hooks, pinned
    return hooks + theirs, {**pinned, **{hook: project.hook_pins.get(hook, {}) for hook in theirs}}
