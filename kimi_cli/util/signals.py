"""SIGINT and SIGTERM always end a run: the task is cancelled, and a watchdog exits if cleanup hangs.

Cancellation unwinds the loop (tool results marked interrupted, sandboxes and processes closed). A tool
blocked in a worker thread (a read from a pipe nobody writes, a hung filesystem) cannot be cancelled,
and asyncio would wait for it at exit: the watchdog ends the process with exit 4 after a grace period.
Every finished step is already in the session log (each record is flushed as it is written).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading

from kimi_cli.errors import ExitCode

GRACE_SECONDS = 1.5


def alive(pid: object) -> bool:
    """Whether a process with this id still exists (signal 0 sends nothing; a process of another user counts).
    Anything but a positive int is no process: a session's metadata or a container's label may hold junk."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class CancelOnSignal:
    """Cancels `task` on SIGINT/SIGTERM and arms a watchdog that exits if the process is still here later."""

    def __init__(self, task: asyncio.Task[object], grace: float = GRACE_SECONDS) -> None:
        self.task = task
        self.grace = grace
        self.received: int | None = None
        self._watchdog: threading.Timer | None = None

    def install(
        self, loop: asyncio.AbstractEventLoop, signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)
    ) -> None:
        for sig in signals:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: int) -> None:
        if self.received is not None:  # a second signal: no more patience
            self._exit()
        self.received = sig
        self.task.cancel()
        self._watchdog = threading.Timer(self.grace, self._exit)
        self._watchdog.daemon = True
        self._watchdog.start()

    def _exit(self) -> None:
        with contextlib.suppress(Exception):
            sys.stderr.write("kimi: cancelled; cleanup did not finish in time, exiting (the session is saved)\n")
            sys.stderr.flush()
        os._exit(int(ExitCode.CANCELLED))

    def disarm(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
