"""Workspace files a command kimi starts on the host names are pinned: a hook, an MCP server or a language
server runs on the host, so the script it starts must be the one the user agreed to, not one a sandboxed
command (or a file tool) rewrote a moment ago.

The command is split at every shell separator, quotes dropped and `$PWD`/$CLAUDE_PROJECT_DIR/
$KIMI_PROJECT_DIR put in; each word that names a file inside the workspace is pinned: the digest covers the
text of every link on the way to it and the content it leads to (a linked script's target can be rewritten,
and the link pointed elsewhere).
Before each run the digests are compared; a changed or vanished script is not run (the caller blocks). The
digests also go into the folder's trust digest (kimi_cli.hostsafe.trust), so a script changed between sessions asks
for trust again. Hooks (kimi_cli.extensions.hooks), MCP servers (kimi_cli.extensions.mcp.host_launch) and
language servers (kimi_cli.extensions.lsp.project) share these pins.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from kimi_cli.kernel.contain import below

PROJECT_VARS = re.compile(r"\$\{?(CLAUDE_PROJECT_DIR|KIMI_PROJECT_DIR|PWD)\}?")
SEPARATORS = re.compile(r"[\s;&|()<>`]+")
MAX_SCRIPT_BYTES = 4 * 1024 * 1024


def _words(command: str, root: Path) -> list[str]:
    """Every word of the command that may name a file, however the shell spells it: quotes dropped,
    `$PWD` and the project variables (hooks start in the workspace) put in, split at every separator
    (`(sh x)`, `sh x;true`, `a|b`). Reading more words than the shell would only pins more files."""
    text = PROJECT_VARS.sub(lambda _m: str(root), command.replace('"', "").replace("'", ""))
    return [w for w in SEPARATORS.split(text) if w]


def named_files(command: str, workdir: Path) -> list[str]:
    """Workspace-relative paths of the files the command names that exist in the workspace."""
    root = workdir.resolve()
    found: list[str] = []
    for word in _words(command, root):
        word = word.split("=", 1)[1] if "=" in word.split("/")[0] else word  # --opt=path, VAR=path
        if not word or word.startswith("-"):
            continue
        path = Path(os.path.normpath(word if os.path.isabs(word) else root / word))
        rel = below(root, path)
        if not rel:  # the workspace itself, or outside it
            continue
        if rel not in found and os.path.lexists(path) and not os.path.isdir(path):
            found.append(rel)
    return found


def digest(workdir: Path, rel: str) -> str:
    """sha256 of what the hook would run: every link on the way (its text) and the content it leads to,
    read as a regular file within bounds. A file that cannot be read that way has a marker naming why
    and its links, so pointing it elsewhere still changes the pin."""
    from kimi_cli.hostsafe.programs import walk_links
    from kimi_cli.hostsafe.settings_read import read_settings_bytes

    walk = walk_links(str(workdir.resolve() / rel))
    links = [f"{step} -> {target}" for step, target in walk.links]
    hasher = hashlib.sha256("\n".join(links).encode("utf-8", "surrogateescape") + b"\0")
    try:
        hasher.update(read_settings_bytes(walk.end, MAX_SCRIPT_BYTES + 1, head=True))
    except OSError as exc:
        return f"unreadable:{exc.errno}:{hasher.hexdigest()}"
    return hasher.hexdigest()


def pin(command: str, workdir: Path) -> dict[str, str]:
    return {rel: digest(workdir, rel) for rel in named_files(command, workdir)}


def changed(pins: dict[str, str], workdir: Path) -> list[str]:
    """The pinned files that are no longer what they were."""
    return [rel for rel, was in pins.items() if digest(workdir, rel) != was]
