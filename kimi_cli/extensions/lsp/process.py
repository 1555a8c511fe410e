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
import os
import shlex
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kimi_cli.extensions.lsp.servers import Located

STDERR_KEEP = 16 * 1024
STDERR_DRAIN = 32 * 1024 * 1024
READ_LIMIT = 64 * 1024  # the stream buffer: a header line longer than this breaks the protocol


class SandboxSpawn(Protocol):
    """A sandbox that can start a long-lived process (bwrap, landlock, none: kimi_cli.sandbox.backends)."""

    name: str

    def spawn_spec(
        self, command: str
    ) -> tuple[list[str], dict[str, str], Callable[[], None] | None, tuple[int, ...]]: ...


@dataclass
class StderrTail:
    """The last STDERR_KEEP bytes of a stream and how much came."""

    kept: bytearray = field(default_factory=bytearray)
    total: int = 0
    stopped: bool = False  # past STDERR_DRAIN: no longer read

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self.kept += data
        if len(self.kept) > STDERR_KEEP:
            del self.kept[: len(self.kept) - STDERR_KEEP]

    def last_line(self) -> str:
        lines = [line.strip() for line in self.kept.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1][:200] if lines else ""

    def text(self) -> str:
        return self.kept.decode("utf-8", "replace")


@dataclass
class ServerProcess:
    proc: asyncio.subprocess.Process
    stderr: StderrTail
    drain: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.proc.returncode is None

    async def stop(self, grace: float = 2.0) -> None:
        """End the launcher's group: SIGTERM (the launcher ends the server's group), then SIGKILL."""
        pid = self.proc.pid
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        if self.proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), 2.0)
        if self.drain is not None:
            self.drain.cancel()
        # The pipes' transport closes only once every pipe has: a stderr no longer read (a flood) would hold it
        # open past the loop. asyncio has no public way to close it; the process is gone by now.
        transport = getattr(self.proc, "_transport", None)
        if transport is not None:
            transport.close()


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


async def start_in_sandbox(
    command: str, sandbox: SandboxSpawn, cwd: Path, outside: tuple[Path, ...]
) -> asyncio.subprocess.Process:
    """`command` (a shell line) as the sandbox's long-lived process, under the launcher that ends its group with
    kimi, with pipes for its three streams; the MCP servers start this way too (kimi_cli.extensions.mcp.sandboxed).
    `outside`: the sandbox-writable folders the sandbox's own program is never looked up in. OSError when it
    cannot start."""
    from kimi_cli.hostsafe.launch import supervised
    from kimi_cli.hostsafe.programs import host_which

    argv, env, preexec, fds = sandbox.spawn_spec(command)
    try:
        # The sandbox's own program (bwrap, or the shell landlock restricts) never from a sandbox-writable folder.
        program = argv[0] if "/" in argv[0] else host_which(argv[0], outside) or argv[0]
        launcher, args = supervised(program, argv[1:])
        return await asyncio.create_subprocess_exec(
            launcher, *args, cwd=str(cwd), env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
            preexec_fn=preexec, pass_fds=fds, limit=READ_LIMIT,
        )  # fmt: skip
    finally:
        for fd in fds:  # bwrap has read its seccomp program from this pipe, or holds its own copy
            with contextlib.suppress(OSError):
                os.close(fd)


async def _drain(proc: asyncio.subprocess.Process, tail: StderrTail) -> None:
    assert proc.stderr is not None
    with contextlib.suppress(Exception):
        while chunk := await proc.stderr.read(65536):
            tail.feed(chunk)
            if tail.total > STDERR_DRAIN:
                tail.stopped = True
                tail.feed(b"\n[kimi: past 32 MB, this server's stderr is no longer read]\n")
                return
