"""Filling in a custom command: `$ARGUMENTS` and `$1`..`$9`, then `!cmd` lines, then `@file` mentions.

- Arguments are split as a shell would (quotes group words); inside a `!cmd` line they are shell-quoted, so
  an argument is data there, never more shell.
- `!cmd` runs in the session's sandbox, through its approver (deny rules, `--sandbox none` asking), and its
  output takes the line's place. A project command runs them only in a trusted folder (kimi_cli.hostsafe.trust).
- `@path` adds the file's text after the prompt when it is a text file inside the workspace, read through
  the no-follow reader (kimi_cli.hostsafe.fs); anything else is left as written, with a note why.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from kimi_cli.extensions.custom_commands.loader import SHELL_LINE, CustomCommand

MENTION = re.compile(r"(?<![\w@/`])@((?:[\w.\-]+/)*[\w.\-]+)")
POSITIONAL = re.compile(r"\$([1-9])")
FILE_CAP = 256 * 1024
OUTPUT_CAP = 30_000

# command -> its output (exit status included when not 0); raises nothing the caller must catch
RunShell = Callable[[str], Awaitable[str]]


@dataclass
class Expansion:
    """The prompt a command produced, and what the user should be told about it."""

    prompt: str
    notes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # included by @mention


def split_args(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError:  # an unbalanced quote: plain words
        return args.split()


def substitute(text: str, args: str, quote: bool = False) -> str:
    words = split_args(args)

    def one(value: str) -> str:
        return shlex.quote(value) if quote else value

    text = text.replace("$ARGUMENTS", one(args.strip()) if args.strip() else "")
    return POSITIONAL.sub(lambda m: one(words[int(m.group(1)) - 1]) if int(m.group(1)) <= len(words) else "", text)


async def expand(
    command: CustomCommand, args: str, workdir: Path, run_shell: RunShell | None, may_run: bool
) -> Expansion:
    """The command's prompt for `args`. `may_run`: its `!cmd` lines may run (a user command, or a project
    command in a trusted folder); `run_shell`: how (None: nowhere to run them)."""
    notes: list[str] = []
    body = command.body
    if "$ARGUMENTS" not in body and not POSITIONAL.search(body) and args.strip():
        body = body.rstrip("\n") + f"\n\n{args.strip()}"  # as Claude Code does: arguments follow the prompt
    # `!cmd` segments first, with shell-quoted arguments; the rest with the arguments as typed
    parts: list[str] = []
    last = 0
    for match in SHELL_LINE.finditer(body):
        parts.append(substitute(body[last : match.start()], args))
        line = substitute(match.group(1), args, quote=True)
        parts.append(await _shell(line, run_shell, may_run, command, notes))
        last = match.end()
    parts.append(substitute(body[last:], args))
    prompt = "".join(parts)
    prompt, files = _mentions(prompt, workdir, notes)
    return Expansion(prompt.strip("\n"), notes, files)


async def _shell(line: str, run_shell: RunShell | None, may_run: bool, command: CustomCommand, notes: list[str]) -> str:
    if not may_run:
        notes.append(f"/{command.name}: `{line}` was not run: this folder is not trusted (kimi trust, or --trust)")
        return f"[`{line}` not run: the folder is not trusted]"
    if run_shell is None:
        notes.append(f"/{command.name}: `{line}` was not run: no sandbox here")
        return f"[`{line}` not run]"
    output = await run_shell(line)
    return output if len(output) <= OUTPUT_CAP else output[:OUTPUT_CAP] + "\n[... output cut]"


def _mentions(prompt: str, workdir: Path, notes: list[str]) -> tuple[str, list[str]]:
    """Append the text of each @file inside the workspace; the mention stays in the prompt as written."""
    from kimi_cli.hostsafe.files import looks_binary
    from kimi_cli.hostsafe.fs import read_bytes
    from kimi_cli.tools.workspace import Workspace

    workspace = Workspace(workdir)
    blocks: list[str] = []
    files: list[str] = []
    for match in MENTION.finditer(prompt):
        name = match.group(1).rstrip(".")
        if name in files:
            continue
        try:
            rel = workspace.rel(workspace.resolve(name))
            data = read_bytes(workspace.root, rel, FILE_CAP + 1)
        except Exception as exc:  # outside the workspace, missing, a folder, a link swapped in: left as written
            if (workdir / name).exists() or "outside" in str(exc):
                notes.append(f"@{name} was not included: {str(exc).splitlines()[0][:200]}")
            continue
        if looks_binary(data[:8192]):
            notes.append(f"@{name} was not included: it is not a text file")
            continue
        text = data[:FILE_CAP].decode("utf-8", errors="replace")
        cut = "\n[... cut at 256 KB]" if len(data) > FILE_CAP else ""
        blocks.append(f'<file path="{rel}">\n{text.rstrip()}{cut}\n</file>')
        files.append(name)
    if blocks:
        prompt = prompt.rstrip("\n") + "\n\n" + "\n\n".join(blocks)
    return prompt, files


def allow_rules(allowed_tools: list[str]) -> list[str]:
    """Claude Code's `allowed-tools` as kimi's approval allow rules for the command's turn:
    `Bash(git add:*)` -> `git add`, `Bash(npm test)` -> `npm test`, `mcp__s__t` -> itself,
    `WebFetch(domain:example.com)` -> `web:example.com`. A bare `Bash` (every command) is not taken: name
    the commands. File tools need no approval in kimi."""
    rules: list[str] = []
    for item in allowed_tools:
        item = item.strip()
        head, _, rest = item.partition("(")
        inner = rest[:-1].strip() if rest.endswith(")") else ""
        if head in ("Bash", "Shell") and inner:
            rule = inner[:-2] if inner.endswith(":*") else inner
            rule = rule.rstrip("*").strip()
            if rule:
                rules.append(rule)
        elif head.startswith("mcp__"):
            rules.append(head)
        elif head in ("WebFetch", "FetchURL") and inner.startswith("domain:"):
            rules.append("web:" + inner.removeprefix("domain:").strip())
    return rules
