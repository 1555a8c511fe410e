"""The kimi side of the landlock spawner (see spawner_main.py): start commands, read them, reap them."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from kimi_cli.sandbox.base import ExecResult, OutputCollector, Started, kill_group

MAIN = Path(__file__).resolve().parents[3] / "kernel" / "spawner_main.py"  # stdlib only, run as python -I -S


class Spawner:
    """One helper process per sandbox; requests are answered in order, exits as they happen."""

    def __init__(
        self,
        ruleset_fd: int,
        roots: list[str],
        network: bool,
        hidden: list[str] | None = None,
        abi: int = 6,
        signal_scope: bool = True,
    ) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # Its own session (a Ctrl-C at the terminal is kimi's to handle, not a reason for it to die) and an
        # empty environment (kimi's holds the API key); it dies with kimi (PR_SET_PDEATHSIG, set inside).
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(MAIN), str(theirs.fileno()), str(ruleset_fd), str(os.getpid())],
            stdin=subprocess.PIPE, pass_fds=(theirs.fileno(), ruleset_fd), close_fds=True, start_new_session=True,
            env={},
        )  # fmt: skip
        assert self.proc.stdin is not None
        config = {"roots": roots, "network": network, "hidden": hidden or [], "abi": abi, "signal_scope": signal_scope}
        self.proc.stdin.write(json.dumps(config).encode())
        self.proc.stdin.close()
        theirs.close()
        ours.setblocking(False)
        self.sock = ours
        self.pending: collections.deque[asyncio.Future[tuple[int, int]]] = collections.deque()
        self.exits: dict[int, asyncio.Future[int]] = {}
        self._early: dict[int, int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def _ensure_reader(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            loop.add_reader(self.sock.fileno(), self._on_readable)

    def _on_readable(self) -> None:
        while True:
            try:
                data, fds, _flags, _addr = socket.recv_fds(self.sock, 1 << 16, 1)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data, fds = b"", []
            if not data:
                self._fail_all()
                return
            message = json.loads(data)
            if "pid" in message and self.pending:
                self.pending.popleft().set_result((int(message["pid"]), fds[0]))
            elif "exit" in message:
                pid, code = int(message["exit"]), int(message["code"])
                future = self.exits.pop(pid, None)
                if future is not None and not future.done():
                    future.set_result(code)
                else:
                    self._early[pid] = code

    def _fail_all(self) -> None:
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.sock.fileno())
        for future in list(self.pending) + list(self.exits.values()):
            if not future.done():
                future.set_exception(RuntimeError("the landlock spawner stopped"))

    async def start(self, argv: list[str], cwd: str, env: dict[str, str]) -> tuple[int, int, asyncio.Future[int]]:
        self._ensure_reader()
        loop = asyncio.get_running_loop()
        started: asyncio.Future[tuple[int, int]] = loop.create_future()
        self.pending.append(started)
        self.sock.send(json.dumps({"argv": argv, "cwd": cwd, "env": env}).encode())
        pid, fd = await started
        exited: asyncio.Future[int] = loop.create_future()
        if pid in self._early:
            exited.set_result(self._early.pop(pid))
        else:
            self.exits[pid] = exited
        return pid, fd, exited

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self.sock.fileno())
        self.sock.close()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=2)
        if self.proc.poll() is None:
            self.proc.kill()


async def collect(pid: int, fd: int, exited: asyncio.Future[int], timeout: float, cap: int) -> ExecResult:
    """Read a spawned command's output until it exits (and its pipe drains), killing its group on timeout."""
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0))
    collector = OutputCollector(cap)

    async def read_all() -> None:
        while chunk := await reader.read(65536):
            collector.feed(chunk)

    async def pump() -> None:
        reading = asyncio.ensure_future(read_all())
        await asyncio.shield(exited)
        try:
            await asyncio.wait_for(asyncio.shield(reading), 1.0)
        except TimeoutError:
            kill_group(pid)  # done; a background child still holds the output: it goes now
            await reading

    timed_out = False
    try:
        await asyncio.wait_for(pump(), timeout)
    except TimeoutError:
        timed_out = True
    finally:
        kill_group(pid)
        transport.close()
    code = None if timed_out or not exited.done() else exited.result()
    text, cut = collector.result()
    return ExecResult(text, code, timed_out, time.monotonic() - started, cut)


async def started_from(pid: int, fd: int, exited: asyncio.Future[int]) -> Started:
    """A spawned command as a background task: its output pipe wrapped in a stream reader."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0))
    return Started(pid, reader, exited, transport)
