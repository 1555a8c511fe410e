"""Where a session's hooks come from, in the order they run: the user's (~/.kimi/config.toml, then Claude
Code's ~/.claude/settings.json), then, in a trusted folder only, the project's (.kimi/config.toml, then
.claude/settings.json and .claude/settings.local.json).

The project's hooks are read once, with the scripts they name pinned, and only then is trust checked; the
hooks, their scripts' digests and what the trust decision covered must be the same, else none of the
project's hooks run. A writer that changes the files between the read and the check (a command of another
session in the same folder) cannot slip in a hook or a script nobody trusted.
"""

from __future__ import annotations

from pathlib import Path

from kimi_cli.hooks import claude, pins
from kimi_cli.hooks.config import Hook, _table, hooks_from

Pinned = dict[Hook, dict[str, str]]


def load_hooks(workdir: Path) -> list[Hook]:
    """The user's hooks, then the project's when the folder is trusted (kimi_cli.trust)."""
    return load_pinned(workdir)[0]


def load_pinned(workdir: Path) -> tuple[list[Hook], Pinned]:
    """The hooks and, for each, the digests of the workspace scripts it names, taken as they were read."""
    from kimi_cli import trust
    from kimi_cli.paths import config_files

    user_file, project_file = config_files(workdir)
    hooks = hooks_from(_table(user_file), "user") + claude.user_hooks()
    pinned = {hook: pins.pin(hook.command, workdir) for hook in hooks}
    if trust.is_users_own(workdir):
        return hooks, pinned
    table = _table(project_file) if project_file.is_file() else None
    own, theirs = hooks_from(table, "project"), claude.project_hooks(workdir)
    if not own and not theirs:
        return hooks, pinned
    project_pins = {hook: pins.pin(hook.command, workdir) for hook in own + theirs}
    state = trust.trusted_state(workdir)  # assessed after the read above
    if state is None or not _as_trusted(state, table, theirs, project_pins):
        return hooks, pinned
    return hooks + own + theirs, {**pinned, **project_pins}


def _as_trusted(state: object, table: object, theirs: list[Hook], project_pins: Pinned) -> bool:
    """Whether the hooks read are the ones the trust decision saw: the .kimi table, the Claude Code hooks
    and the scripts' digests, each as the trust digest holds it (absent when there is none)."""
    asks = {w.key: w.value for w in getattr(state, "asks", [])}
    scripts: dict[str, str] = {}
    for named in project_pins.values():
        scripts.update(named)
    return (
        asks.get("hooks") == table
        and asks.get("claude.hooks") == (claude.listing(theirs) or None)
        and asks.get("hooks.scripts") == (dict(sorted(scripts.items())) or None)
    )
