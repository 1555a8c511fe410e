"""What a stdio MCP server starts with on the host: a program and files the user agreed to, nothing more.

A stdio server runs outside the sandbox, with the user's rights, and is usually started in the workspace,
which sandboxed commands may write. So:
- a bare command (`npx`, `uvx`, `python3`) is looked up outside every folder a sandboxed command may write
  (kimi_cli.hostsafe.programs), never in the project's `.venv/bin` that happens to be on PATH;
- workspace files the command line names (`python3 tools/server.py`) are pinned when the manager is made and
  checked before every (re)start: a script rewritten meanwhile is not run. Their digests, and the servers of
  every `mcp_config` file the folder's config names, also go into the folder's trust digest (`widenings`),
  so a change between sessions asks for trust again;
- `python3 -m NAME` does not put the current folder on `sys.path` (PYTHONSAFEPATH): `-m mcp_server_time` must
  not import a `mcp_server_time.py` a command dropped into the workspace; a server's own `env` may undo it
  (a project server that runs `-m` on its own workspace package sets `"PYTHONPATH": "."`);
- kimi's API key is not passed unless the server's own `env` names it;
- nothing outlives kimi: each server runs under the launcher of kimi_cli.hostsafe.launch (`supervised`),
  whose parent-death signal takes the server's whole process group down with kimi.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kimi_cli.hostsafe.project_settings import ProjectSettings


def command_line(command: str, args: list[str]) -> str:
    return shlex.join([command, *map(str, args)])


def server_pins(command: str, args: list[str], cwd: Path) -> dict[str, str]:
    """Digests of the files inside `cwd` (the workspace) that the server's command line names."""
    from kimi_cli.hostsafe.pins import pin

    return pin(command_line(command, args), cwd)


def changed_pins(pins: dict[str, str], cwd: Path) -> list[str]:
    from kimi_cli.hostsafe.pins import changed

    return changed(pins, cwd)


def resolve_command(command: str) -> str:
    """The program to start: a path as given; a bare name found outside sandbox-writable folders."""
    from kimi_cli.hostsafe.programs import host_which

    if "/" in command:
        return command
    found = host_which(command)
    if found is None:
        raise FileNotFoundError(
            2, f"{command!r} was not found on PATH outside the workspace (folders inside it are skipped for "
            "programs kimi starts on the host; name a path to use one there)", command,
        )  # fmt: skip
    return found


def code_from_cwd(args: list[str]) -> bool:
    """`python -m NAME` / `-c CODE` (alone or in a cluster such as `-Bm`): Python would put the current
    folder first on sys.path. A script path (`python server.py`) puts the script's own folder there instead."""
    for arg in args:
        if arg == "--" or not arg.startswith("-"):
            return False
        if not arg.startswith("--") and ("m" in arg[1:] or "c" in arg[1:]):
            return True
    return False


def server_env(
    own: dict[str, str], args: list[str] | None = None, environ: dict[str, str] | None = None
) -> dict[str, str]:
    """The server's environment: kimi's without any variable kimi reads its API key from (every provider's:
    kimi_cli.hostsafe.secrets), and for `python -m` with PYTHONSAFEPATH so the workspace is not on sys.path;
    then the server's own `env`, which may set anything back (`"NAME": "${NAME}"` passes one on)."""
    from kimi_cli.hostsafe.secrets import without_keys

    base = without_keys(os.environ if environ is None else environ)
    if code_from_cwd(args or []):
        base["PYTHONSAFEPATH"] = "1"
    return {**base, **own}


def widenings(project: ProjectSettings) -> list[tuple[str, object, str]]:
    """For kimi_cli.hostsafe.trust, from the folder's snapshot: the servers of each `mcp_config` file its config lists
    (their content, wherever the file lives), and the workspace files its own servers name (their digests)."""
    found: list[tuple[str, object, str]] = []
    for raw, listed in project.mcp_files.items():
        content: Any = listed.servers if listed.error is None else f"unreadable: {listed.error}"
        names = ", ".join(sorted(content)) if isinstance(content, dict) else str(content)
        found.append((f"mcp_config:{raw}", content, f"start the MCP servers listed in {raw}: {names or 'none'}"))
    labels = {str(project.mcp_path): ""} | {str(f.path): f"{raw}:" for raw, f in project.mcp_files.items()}
    named = sorted((f"{labels.get(source, source + ':')}{name}", pins) for (source, name), (_root, pins)
                   in project.server_pins.items())  # fmt: skip
    for name, pins in named:
        if pins:
            files_named = ", ".join(sorted(pins))
            found.append((f"mcp:{name}:files", pins, f"run these workspace files as the MCP server {name!r}: "
                          f"{files_named}"))  # fmt: skip
    return found
