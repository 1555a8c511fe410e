"""A long-lived process in the session's sandbox (a language server, a sandboxed MCP server), ended with kimi.

The sandbox starts it as its own kind of long-lived process (`spawn_spec`, as background tasks use), under the
host launcher whose parent-death signal ends its group when kimi goes (kimi_cli.hostsafe.launch). Its stderr
is kept bounded (StderrTail): the last 16 KB for the user; past 32 MB its reader stops. Language servers
(kimi_cli.extensions.lsp.process) and sandboxed MCP servers (kimi_cli.extensions.mcp.sandboxed) both start
this way, so the routine lives here, below both extensions.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

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
