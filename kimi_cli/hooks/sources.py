"""Where a session's hooks come from, in the order they run: the user's (~/.kimi/config.toml, then Claude
Code's ~/.claude/settings.json), then, in a trusted folder only, the project's (.kimi/config.toml, then
.claude/settings.json and .claude/settings.local.json)."""

from __future__ import annotations

from pathlib import Path

from kimi_cli.hooks import claude
from kimi_cli.hooks.config import Hook, _table, hooks_from


def load_hooks(workdir: Path) -> list[Hook]:
    """The user's hooks, then the project's when the folder is trusted (kimi_cli.trust)."""
    from kimi_cli import trust
    from kimi_cli.paths import config_files

    user_file, project_file = config_files(workdir)
    hooks = hooks_from(_table(user_file), "user") + claude.user_hooks()
    if not trust.is_users_own(workdir) and trust.is_trusted(workdir):
        if project_file.is_file():
            hooks += hooks_from(_table(project_file), "project")
        hooks += claude.project_hooks(workdir)
    return hooks
