"""Which of the folder's files each trust ask comes from, for the question to name it (issue 46, item 8).

An ask's key says what kind of setting it is (kimi_cli.hostsafe.trust.widening_in, and the extensions' own
`widenings` that the snapshot collected); this maps each kind to the file the snapshot read it from, so the
user can open that file and look before saying yes. One table, keyed by the key's form, read by both front
ends' trust questions. Paths are relative to the folder, as the user sees them in the repository.
"""

from __future__ import annotations

from pathlib import Path

from kimi_cli.hostsafe.project_settings import CONFIG, MCP, ProjectSettings

CLAUDE_SETTINGS = (".claude/settings.json", ".claude/settings.local.json")


def source_of(key: str, project: ProjectSettings) -> str:
    """The file (or files, joined by ' and ') that the ask with this key was read from."""
    if key.startswith("mcp_config:"):  # a file the config's mcp_config names, listed there
        return f"{_shown(key[len('mcp_config:') :], project.folder)} (named by {CONFIG}'s mcp_config)"
    if key.startswith("mcp:"):
        name = key[len("mcp:") :].removesuffix(":files")
        for raw, listed in project.mcp_files.items():  # `mcp:RAW:NAME:files`: a server of an mcp_config file
            if name.startswith(raw + ":"):
                return _shown(str(listed.path), project.folder)
        return MCP
    if key.startswith("commands:"):  # commands:FOLDER/REL, FOLDER the commands root (.kimi/commands)
        return _shown(key[len("commands:") :], project.folder)
    if key.startswith("lsp:project:"):
        return _shown(key[len("lsp:project:") :], project.folder)
    if key == "claude.hooks":
        return _claude_files(project)
    if key == "hooks.scripts":  # the scripts are named by hooks of either file: those whose hooks name one
        pinned = [hook for hook, scripts in project.hook_pins.items() if scripts]
        named = [CONFIG] if any(h in project.kimi_hooks for h in pinned) else []
        named += [_claude_files(project)] if any(h in project.claude_hooks for h in pinned) else []
        return " and ".join(named) or CONFIG
    return CONFIG  # a setting of .kimi/config.toml (kimi_cli.hostsafe.trust_rules.WIDENING)


def _claude_files(project: ProjectSettings) -> str:
    present = [name for name in CLAUDE_SETTINGS if (project.folder / name).is_file()]
    return " and ".join(present or CLAUDE_SETTINGS[:1])


def _shown(path: str, folder: Path) -> str:
    """A path inside the folder as relative; one outside it whole (an mcp_config file may live anywhere)."""
    try:
        return str(Path(path).relative_to(folder)) if Path(path).is_absolute() else path
    except ValueError:
        return path
