"""Hooks written for Claude Code, read from its own settings files and run as Claude Code would run them.

    .claude/settings.json, .claude/settings.local.json   the project's (trusted folders only)
    ~/.claude/settings.json                               the user's

    {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "...",
                                                              "timeout": 30}]}]}}

Only `command` hooks exist here (Claude Code's `prompt` hooks ask a model; they are skipped, with their
count in /hooks). Such a hook sees the event as Claude Code would send it: tool names and inputs in Claude
Code's shape (`Bash` with `command`, `Write`/`Edit`/`Read` with an absolute `file_path`,
`old_string`/`new_string`), and an `updatedInput` it returns is read back into kimi's shape. kimi's own
hooks (config.toml) get kimi's names and inputs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimi_cli.config import HOOK_EVENTS, HOOK_TIMEOUT
from kimi_cli.extensions.hooks.config import Hook
from kimi_cli.util import jsonsafe

if TYPE_CHECKING:
    from kimi_cli.hostsafe.project_settings import ProjectSettings

PROJECT_FILES = (".claude/settings.json", ".claude/settings.local.json")
USER_FILE = "~/.claude/settings.json"
MAX_SETTINGS_BYTES = 1024 * 1024


def read_settings(path: Path, workdir: Path | None = None) -> object:
    """The `hooks` table of one settings file; a project file is read through the no-follow reader."""
    try:
        if workdir is not None:
            from kimi_cli.hostsafe import fs as safe_fs

            data = safe_fs.read_bytes(workdir.resolve(), str(path.relative_to(workdir)), MAX_SETTINGS_BYTES)
        else:
            from kimi_cli.hostsafe.settings_read import read_settings_bytes

            data = read_settings_bytes(path, MAX_SETTINGS_BYTES)
        parsed = jsonsafe.loads(data)
    except (OSError, ValueError):
        return None
    return parsed.get("hooks") if isinstance(parsed, dict) else None


def hooks_in(table: object, source: str) -> list[Hook]:
    """Hooks from a Claude Code `hooks` table; entries of another shape are skipped."""
    out: list[Hook] = []
    if not isinstance(table, dict):
        return out
    for event in HOOK_EVENTS:
        groups = table.get(event)
        if not isinstance(groups, list):
            continue
        index = 0
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            matcher = group.get("matcher") if isinstance(group.get("matcher"), str) else None
            for item in group["hooks"]:
                if not isinstance(item, dict) or item.get("type", "command") != "command":
                    continue
                command = item.get("command")
                if not isinstance(command, str) or not command.strip():
                    continue
                timeout = item.get("timeout")
                seconds = float(timeout) if isinstance(timeout, int | float) and 0 < timeout <= 3600 else HOOK_TIMEOUT
                out.append(Hook(event, command, matcher, seconds, "continue", source, index, dialect="claude"))
                index += 1
    return out


def project_hooks(workdir: Path) -> list[Hook]:
    hooks: list[Hook] = []
    for name in PROJECT_FILES:
        hooks += hooks_in(read_settings(workdir / name, workdir), f"project: {name}")
    return hooks


def user_hooks() -> list[Hook]:
    return hooks_in(read_settings(Path(os.path.expanduser(USER_FILE))), f"user: {USER_FILE}")


def widenings(project: ProjectSettings) -> list[tuple[str, object, str]]:
    """For kimi_cli.hostsafe.trust: the project's Claude Code hooks, as the folder's snapshot read them (their commands
    go into the trust digest)."""
    hooks = project.claude_hooks
    if not hooks:
        return []
    listed = listing(hooks)
    commands = "; ".join(dict.fromkeys(h.command for h in hooks))
    return [("claude.hooks", listed, f"run hook commands from .claude/settings.json: {commands}")]


def listing(hooks: list[Hook]) -> list[list[object]]:
    """How the project's Claude Code hooks enter the trust digest."""
    return [[h.event, h.matcher, h.command, h.timeout] for h in hooks]


# --- the event as Claude Code sends it -----------------------------------------------------------------

CLAUDE_NAME = {"Shell": "Bash", "WriteFile": "Write", "ReadFile": "Read", "Glob": "Glob", "Grep": "Grep",
               "SetTodoList": "TodoWrite", "Agent": "Task", "FetchURL": "WebFetch", "SearchWeb": "WebSearch",
               "TaskOutput": "BashOutput", "TaskStop": "KillShell"}  # fmt: skip


def _abs(workdir: Path, path: object) -> object:
    return str(workdir / path) if isinstance(path, str) and not os.path.isabs(path) else path


def _rel(workdir: Path, path: object) -> object:
    if isinstance(path, str) and os.path.isabs(path):
        from kimi_cli.kernel.contain import below

        return below(workdir, path) or path  # the workspace itself, or outside it: as it is
    return path


def _claude_edit(edit: dict[str, Any]) -> dict[str, Any]:
    return {"old_string": edit.get("old"), "new_string": edit.get("new"), "replace_all": bool(edit.get("replace_all"))}


def claude_event(payload: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """A tool event's payload with Claude Code's tool name and input shape; other events unchanged."""
    name, args = payload.get("tool_name"), payload.get("tool_input")
    if not isinstance(name, str) or not isinstance(args, dict):
        return payload
    out = dict(payload)
    if name == "StrReplaceFile":
        path = _abs(workdir, args.get("path"))
        edits = args.get("edits") if isinstance(args.get("edits"), list) else None
        if edits:
            out["tool_name"] = "MultiEdit"
            out["tool_input"] = {"file_path": path, "edits": [_claude_edit(e) for e in edits if isinstance(e, dict)]}
        else:
            out["tool_name"] = "Edit"
            out["tool_input"] = {"file_path": path, **_claude_edit(args.get("edit") or {})}
        return out
    out["tool_name"] = CLAUDE_NAME.get(name, name)
    if name == "Shell":
        shown: dict[str, Any] = {"command": args.get("command")}
        if isinstance(args.get("timeout"), int):
            shown["timeout"] = args["timeout"] * 1000  # Claude Code's Bash timeout is in milliseconds
        if args.get("background"):
            shown["run_in_background"] = True
        out["tool_input"] = shown
    elif name == "WriteFile":
        out["tool_input"] = {"file_path": _abs(workdir, args.get("path")), "content": args.get("content")}
    elif name == "ReadFile":
        out["tool_input"] = {"file_path": _abs(workdir, args.get("path")), "offset": args.get("line_offset", 1),
                             "limit": args.get("n_lines", 1000)}  # fmt: skip
    return out


def kimi_input(tool: str, given: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """A Claude Code hook's `updatedInput` for `tool`, in kimi's shape (keys kimi does not know are dropped,
    so the call is validated as the model's own would be)."""
    path = _rel(workdir, given.get("file_path"))
    if tool == "Shell":
        out: dict[str, Any] = {"command": given.get("command")}
        if isinstance(given.get("timeout"), int | float) and given["timeout"] > 0:
            out["timeout"] = max(1, min(600, round(given["timeout"] / 1000)))
        if given.get("run_in_background"):
            out["background"] = True
        return out
    if tool == "WriteFile":
        return {"path": path, "content": given.get("content")}
    if tool == "ReadFile":
        out = {"path": path}
        if isinstance(given.get("offset"), int):
            out["line_offset"] = given["offset"]
        if isinstance(given.get("limit"), int):
            out["n_lines"] = given["limit"]
        return out
    if tool == "StrReplaceFile":

        def kimi_edit(e: dict[str, Any]) -> dict[str, Any]:
            return {"old": e.get("old_string"), "new": e.get("new_string"), "replace_all": bool(e.get("replace_all"))}

        if isinstance(given.get("edits"), list):
            return {"path": path, "edits": [kimi_edit(e) for e in given["edits"] if isinstance(e, dict)]}
        return {"path": path, "edit": kimi_edit(given)}
    return given
