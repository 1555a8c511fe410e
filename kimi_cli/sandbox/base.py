"""What every sandbox backend shares: the result type, bounded output capture, and process-group runs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kimi_cli.sandbox.guard.command import CommandGuard
    from kimi_cli.sandbox.guard.repo_scrub import Removed
    from kimi_cli.sandbox.policy import SandboxPolicy


@dataclass
class ExecResult:
    output: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    bytes_cut: int = 0


@dataclass
class Started:
    """A command left running (a background task): its pid (and process group), output and exit status."""

    pid: int
    output: asyncio.StreamReader
    exited: asyncio.Future[int]
    transport: asyncio.BaseTransport | None = None  # the pipe's, closed with the task
    lifeline: int | None = None  # an fd whose closing empties the command's sandbox (bwrap); closed with the task

    def release(self) -> None:
        """The task is over: let go of its lifeline (what is still running in its sandbox is killed)."""
        if self.lifeline is not None:
            with contextlib.suppress(OSError):
                os.close(self.lifeline)
            self.lifeline = None

    @classmethod
    def from_process(cls, proc: asyncio.subprocess.Process) -> Started:
        assert proc.stdout is not None
        return cls(proc.pid, proc.stdout, asyncio.ensure_future(proc.wait()))


class Sandbox(Protocol):
    """A place to run shell commands under a policy."""

    name: str

    async def run(self, command: str, timeout: float) -> ExecResult: ...

    async def close(self) -> None: ...


class GuardedSandbox:
    """What bwrap, landlock and Docker share: the one check around every command (guard/command.py). It is
    made on first use (a probe's sandbox walks nothing), and always before a command or a task starts."""

    policy: SandboxPolicy
    guard_mounts = True  # whether the backend mounts policy.read_only read-only (landlock cannot)
    _guard: CommandGuard | None = None

    _preparing: threading.Thread | None = None

    @property
    def guard(self) -> CommandGuard:
        if self._preparing is not None:
            self._preparing.join()
            self._preparing = None
        if self._guard is None:
            self._guard = self._make_guard()
        return self._guard

    def _make_guard(self) -> CommandGuard:
        from kimi_cli.sandbox.guard.command import CommandGuard

        return CommandGuard(self.policy.workspace, self.policy.read_only if self.guard_mounts else ())

    def prepare_guard(self) -> None:
        """Make the guard on a thread now (its first walk of a large tree takes a while); the first command
        waits for it. Nothing runs in the sandbox before, so its baseline is still the session's start."""

        def make() -> None:
            with contextlib.suppress(Exception):  # made again, and its error seen, by the first command
                self._guard = self._make_guard()

        if self._guard is None and self._preparing is None:
            self._preparing = threading.Thread(target=make, name="kimi-guard", daemon=True)
            self._preparing.start()

    def start_guard(self) -> None:
        """Before a background task starts: the session's baseline must exist before anything runs (made here
        when the task is the session's first command); what changed since is reported by the next command."""
        self._guard = self.guard

    async def guarded(self, run: Callable[[], Awaitable[ExecResult]]) -> ExecResult:
        """Run one command between the checks: what an earlier background task did, then what this one did. A
        command whose change to .git or .kimi was put back fails (exit 1); removed settings are told, only."""
        guard = self.guard
        earlier = guard.before()
        try:
            result = await run()
        finally:
            later = guard.after()  # cancelled too: what the command did is undone now, not at the next one
        workspace = self.policy.workspace
        result.output += earlier.note(workspace, "an earlier background command") + later.note(workspace)
        if later.repaired and result.exit_code == 0:
            result.exit_code = 1
        return result

    def accept_own_write(self, rel: str, data: bytes) -> None:
        """kimi wrote `rel` in a folder the guard keeps (a saved rule): the guard keeps that version."""
        self.guard.accept(rel, data)

    def check_protected(self) -> str:
        """Between commands (a background task ended): the note for what it changed, empty when nothing."""
        return self.guard.check("this task")

    def close_guard(self) -> None:
        if self._guard is not None:
            self._guard.close()

    @property
    def removed_settings(self) -> list[Removed]:
        """What the session took out of repositories its commands made (the headless `git_settings_removed`)."""
        return [] if self._guard is None else list(self._guard.removed)


class OutputCollector:
    """Keeps the head and the tail of a byte stream within a cap, so a flood cannot exhaust memory."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap * 2 // 3
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail.append(data)
        self.tail_len += len(data)
        while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_cap:
            self.tail_len -= len(self.tail.popleft())

    def result(self) -> tuple[str, int]:
        tail = b"".join(self.tail)[-self.tail_cap :] if self.tail else b""
        cut = self.total - len(self.head) - len(tail)
        text = self.head.decode("utf-8", errors="replace")
        if cut > 0:
            text += f"\n\n[... {cut} bytes of output cut; the first and last parts are shown ...]\n\n"
        return text + tail.decode("utf-8", errors="replace"), max(cut, 0)


async def run_process_group(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float,
    cap: int,
    preexec_fn: Callable[[], None] | None = None,
    pass_fds: tuple[int, ...] = (),
    stdin: int = asyncio.subprocess.DEVNULL,
) -> ExecResult:
    """Run argv in its own process group; on timeout or cancellation kill the whole group."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=preexec_fn,
        pass_fds=pass_fds,
    )
    collector = OutputCollector(cap)
    assert proc.stdout is not None

    async def read_all() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            collector.feed(chunk)

    async def pump() -> None:
        reader = asyncio.ensure_future(read_all())
        # asyncio's proc.wait() also waits for the pipes to close, which a background child can hold open
        # forever; the exit status itself arrives earlier, so poll for it while the output drains.
        while not reader.done():
            if proc.returncode is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(reader), 1.0)
                except TimeoutError:
                    kill_group(proc.pid)  # the command is done; what it left running goes now
                break
            await asyncio.wait({reader}, timeout=0.05)
        await reader

    timed_out = False
    try:
        await asyncio.wait_for(pump(), timeout)
    except TimeoutError:
        timed_out = True
    finally:
        kill_group(proc.pid)  # nothing started by the command outlives it
        if proc.returncode is None:
            # Shielded: a second cancellation must not drop the process object before its status is read,
            # or closing its transport reaps it first and asyncio's watcher warns (kimi_cli/frontends/quiet.py).
            waiter = asyncio.ensure_future(proc.wait())
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(waiter), 5)
    text, cut = collector.result()
    return ExecResult(text, None if timed_out else proc.returncode, timed_out, time.monotonic() - started, cut)


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
