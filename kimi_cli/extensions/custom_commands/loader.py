"""Finding custom commands: `*.md` files in .kimi/commands/ and .claude/commands/ of the project, then in
~/.kimi/commands/ and ~/.claude/commands/. A sub-folder is a namespace (frontend/component.md is
/frontend:component). The first folder in that order that has a name wins, so project commands shadow
the user's; built-in commands are never shadowed (the front ends skip such a name and say so).

Project files are read through the no-follow reader (kimi_cli.hostsafe.fs): a link cannot pull a file
from outside the workspace into a prompt. They are read once, into the folder's snapshot
(kimi_cli.hostsafe.project_settings), which the trust decision is made on: a project command that runs `!cmd` lines or
pre-approves tools widens what kimi does, so it counts for the folder's trust (`widenings`, into the snapshot's
file_asks), and the command that runs is the one that decision saw.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kimi_cli.hostsafe.project_settings import FolderReader, ProjectSettings
from kimi_cli.util import frontmatter

# (source, folder): project folders are relative to the workspace, user folders to the home folder.
ROOTS: tuple[tuple[str, str], ...] = (
    ("project", ".kimi/commands"),
    ("project", ".claude/commands"),
    ("user", "~/.kimi/commands"),
    ("user", "~/.claude/commands"),
)
MAX_BYTES = 256 * 1024
MAX_FILES = 500
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
SHELL_LINE = re.compile(r"!`([^`\n]+)`")


@dataclass
class CustomCommand:
    """One command file, read."""

    name: str  # without the slash: "review", "frontend:component"
    body: str
    source: str  # "project" | "user"
    folder: str  # the ROOTS folder it came from, as written there
    rel: str  # its path inside that folder
    description: str = ""
    argument_hint: str = ""
    allowed_tools: list[str] = field(default_factory=list)
    model: str = ""

    @property
    def shell_lines(self) -> list[str]:
        """The `!cmd` commands the body runs when the command is used."""
        return SHELL_LINE.findall(self.body)

    @property
    def label(self) -> str:
        """Where it came from, for the menu and /help: `project: .claude/commands`."""
        return f"{self.source}: {self.folder}"


def _user_folder(folder: str) -> Path:
    return Path(os.path.expanduser(folder))


def _files(base: Path) -> list[str]:
    """Markdown files under `base`, relative, sorted; links to folders are not followed."""
    found: list[str] = []
    for current, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.endswith(".md") and not name.startswith("."):
                found.append(os.path.relpath(os.path.join(current, name), base))
                if len(found) >= MAX_FILES:
                    return found
    return found


def _read(source: str, workdir: Path, base: Path, rel: str) -> str | None:
    try:
        if source == "project":
            from kimi_cli.hostsafe import fs as safe_fs

            data = safe_fs.read_bytes(workdir, os.path.relpath(base / rel, workdir), MAX_BYTES + 1)
        else:
            from kimi_cli.hostsafe.settings_read import read_settings_bytes

            data = read_settings_bytes(base / rel, MAX_BYTES + 1, head=True)
    except (OSError, ValueError):
        return None
    if len(data) > MAX_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def parse(name: str, text: str, source: str, folder: str, rel: str) -> CustomCommand:
    meta, body = frontmatter.split(text)
    description = frontmatter.text_of(meta, "description")
    if not description:  # as Claude Code does: the body's first line
        first = next((line.strip() for line in body.splitlines() if line.strip()), "")
        description = first.lstrip("# ")[:100]
    return CustomCommand(
        name, body.strip("\n"), source, folder, rel, description.strip(),
        frontmatter.text_of(meta, "argument-hint").strip(), frontmatter.list_of(meta, "allowed-tools"),
        frontmatter.text_of(meta, "model").strip(),
    )  # fmt: skip


def load_from(source: str, folder: str, workdir: Path) -> list[CustomCommand]:
    workdir = workdir.resolve()
    base = workdir / folder if source == "project" else _user_folder(folder)
    if not base.is_dir() or (source == "project" and base.is_symlink()):
        return []
    commands = []
    for rel in _files(base):
        name = rel[: -len(".md")].replace(os.sep, ":")
        if not NAME.match(name):
            continue
        text = _read(source, workdir, base, rel)
        if text is not None:
            commands.append(parse(name, text, source, folder, rel))
    return commands


def load_commands(workdir: Path, project: list[CustomCommand] | None = None) -> dict[str, CustomCommand]:
    """Every custom command by name; the first root that has a name wins (project before user). `project`:
    the project's commands as the folder's snapshot read them (else they are read now)."""
    if project is None:
        project = [c for source, folder in ROOTS if source == "project" for c in load_from(source, folder, workdir)]
    users = [c for source, folder in ROOTS if source == "user" for c in load_from(source, folder, workdir)]
    found: dict[str, CustomCommand] = {}
    for command in project + users:
        found.setdefault(command.name, command)
    return dict(sorted(found.items()))


def widenings(project: ProjectSettings) -> list[tuple[str, object, str]]:
    """For kimi_cli.hostsafe.trust: project commands that run `!cmd` lines or pre-approve tools (key, value, words),
    from the folder's snapshot."""
    found: list[tuple[str, object, str]] = []
    for command in project.commands:
        if command.shell_lines or command.allowed_tools:
            value = {"run": command.shell_lines, "allowed-tools": command.allowed_tools}
            runs = ", ".join(f"`{line}`" for line in command.shell_lines) or "nothing"
            tools = ", ".join(command.allowed_tools) or "no tool"
            words = f"let its command /{command.name} run {runs} and pre-approve {tools}"
            found.append((f"commands:{command.folder}/{command.rel}", value, words))
    return found


def read_project_commands(project: ProjectSettings) -> None:
    """Into the folder's snapshot: its own commands, in ROOTS order (READER, handed down by kimi_cli.extensions)."""
    for source, root in ROOTS:
        if source == "project" and (project.folder / root).is_dir():
            project.commands += load_from(source, root, project.folder)


READER = FolderReader("kimi_cli.extensions.custom_commands", read_project_commands, widenings)
