"""Starting a language server in the session's sandbox, and ending it with everything it started.

The server is the sandbox's own kind of long-lived process (`spawn_spec`, as background tasks use): on bwrap
and landlock it reads what a sandboxed command may read (not the hidden credential table, not kimi's folders)
and writes only the workspace and the private /tmp; with `--sandbox none` only the user's own servers run, on
the host, with the same scrubbed environment commands get (kimi_cli.sandbox.env: no key variables).

Nothing outlives kimi: the server runs under the launcher MCP servers run under too (kimi_cli.hostsafe.launch.
supervised), the leader of its own process group, whose parent-death signal ends the group when kimi goes;
landlock refuses setsid, so the server's children stay in that group, and on bwrap the sandbox's pid 1 dies
with its parent. A normal stop asks the server to exit, then ends the group.

Its stderr is private and bounded: the last 16 KB are kept for /lsp; past 32 MB it is no longer read, so a
server that floods it blocks on its own writes (and is then stopped as unresponsive) instead of costing kimi.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from pathlib import Path

from kimi_cli.extensions.lsp.servers import Located
from kimi_cli.sandbox.long_lived import STDERR_DRAIN, SandboxSpawn, ServerProcess, StderrTail, start_in_sandbox


def command_line(located: Located, workspace: Path, private_tmp: Path | None) -> str:
    """The shell command the sandbox runs: the server's own environment, then `exec` of its argv. A user's
    server gets the PATH without sandbox-writable folders (its `#!/usr/bin/env node` finds the user's node,
    not one a command planted in node_modules/.bin); every server gets PYTHONSAFEPATH, so a Python it runs
    with `-c` (pyright asks the interpreter for its search paths) imports nothing from the workspace."""
    words = ["PYTHONSAFEPATH=1"]
    if located.source == "user":
        from kimi_cli.hostsafe.programs import trusted_path

        exclude = [workspace] + ([private_tmp] if private_tmp is not None else [])
        words.append("PATH=" + shlex.quote(trusted_path(None, exclude)))
    words += [f"{key}={value}" for key, value in located.spec.env.items()]  # built-in values: shell words
    return " ".join(words) + " exec " + shlex.join(located.argv)


async def spawn(located: Located, sandbox: SandboxSpawn, workspace: Path, private_tmp: Path | None) -> ServerProcess:
    """Start the server in the sandbox with pipes for its three streams. OSError when it cannot start."""
    outside = (workspace, private_tmp) if private_tmp is not None else (workspace,)
    proc = await start_in_sandbox(command_line(located, workspace, private_tmp), sandbox, workspace, outside)
    started = ServerProcess(proc, StderrTail())
    started.drain = asyncio.ensure_future(_drain(proc, started.stderr))
    return started


async def _drain(proc: asyncio.subprocess.Process, tail: StderrTail) -> None:
    assert proc.stderr is not None
    with contextlib.suppress(Exception):
        while chunk := await proc.stderr.read(65536):
            tail.feed(chunk)
            if tail.total > STDERR_DRAIN:
                tail.stopped = True
                tail.feed(b"\n[kimi: past 32 MB, this server's stderr is no longer read]\n")
                return
