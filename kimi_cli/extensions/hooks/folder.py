"""What hooks read of a folder's own files into its snapshot (kimi_cli.hostsafe.project_settings): the
`[[hooks.EVENT]]` tables of `.kimi/config.toml` and Claude Code's `.claude/settings.json` and
`settings.local.json`, each hook's workspace scripts pinned; what of them widens is pins.widenings (the scripts)
then claude.widenings (the Claude Code hooks). Handed down as READER (kimi_cli.extensions)."""

from __future__ import annotations

from typing import Any

from kimi_cli.hostsafe.project_settings import FolderReader, ProjectSettings


def read(project: ProjectSettings) -> None:
    from kimi_cli.extensions.hooks import claude
    from kimi_cli.extensions.hooks.config import hooks_from
    from kimi_cli.hostsafe import pins

    project.kimi_hooks = hooks_from(project.config.get("hooks"), "project")
    if (project.folder / ".claude").is_dir():
        project.claude_hooks = claude.project_hooks(project.folder)
    for hook in project.kimi_hooks + project.claude_hooks:
        project.hook_pins[hook] = pins.pin(hook.command, project.folder)


def widenings(project: ProjectSettings) -> list[tuple[str, Any, str]]:
    from kimi_cli.extensions.hooks.claude import widenings as claude_hooks
    from kimi_cli.extensions.hooks.pins import widenings as hook_scripts

    return [*hook_scripts(project), *claude_hooks(project)]


READER = FolderReader("kimi_cli.extensions.hooks", read, widenings)
