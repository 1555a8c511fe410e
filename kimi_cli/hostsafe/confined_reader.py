"""Confine a host-side reader (ripgrep) to reading the workspace, with its own Landlock domain.

Grep runs `rg` on the host, whatever the session's sandbox (docker images have no rg; `none` has no
sandbox at all). rg opens files by path, so a command that swaps a workspace folder for a link to
~/.ssh while rg walks would have it read the key. Under this domain the kernel refuses any read outside
the workspace (and the system folders rg's loader needs), at the moment of the open, however the path
got there. Where Landlock is missing, None comes back and Grep checks rg's output instead (grep_verify).

Landlock (and no_new_privs) apply per thread, and children inherit them. So a few worker threads per
workspace enter the domain once each and start every rg from there: the start stays a vfork, cheap whatever
kimi's size (a preexec_fn would force a fork of the whole process, ~50 ms at 300 MB). Nothing else ever
runs on those threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

# Public, read-only system files: a dynamically linked rg needs its loader and libraries; stdin is /dev/null.
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/dev/null")
MAX_RUNNERS = 4  # workspaces with confined threads at once (subagents share their session's)
WORKERS = 4  # confined threads per workspace
T = TypeVar("T")


class ConfinedRunner:
    """A thread inside a Landlock domain that may read only `workspace` and run `executable`."""

    def __init__(self, ruleset_fd: int, enter: Callable[[], None]) -> None:
        self._fd = ruleset_fd
        self._enter_domain = enter
        self._local = threading.local()
        # Each worker enters the domain as it starts (a few searches of one batch run side by side).
        self._executor = ThreadPoolExecutor(WORKERS, thread_name_prefix="kimi-confined-reader", initializer=self._enter)

    def _enter(self) -> None:
        self._enter_domain()  # raises: the pool is broken and runs nothing unconfined
        self._local.loop = asyncio.new_event_loop()

    def _run(self, factory: Callable[[], Awaitable[T]]) -> T:
        async def main() -> T:
            return await factory()

        return self._local.loop.run_until_complete(main())

    async def run(self, factory: Callable[[], Awaitable[T]]) -> T:
        """Run the coroutine `factory()` makes on the confined thread (its own event loop) and await it."""
        return await asyncio.wrap_future(self._executor.submit(self._run, factory))

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a plain function on the confined thread and wait for it."""
        return self._executor.submit(fn, *args).result()

    def close(self) -> None:
        self._executor.shutdown(wait=False)
        with contextlib.suppress(OSError):  # a worker not started yet would then fail closed, never run free
            os.close(self._fd)


_runners: OrderedDict[tuple[str, str], ConfinedRunner | None] = OrderedDict()
_lock = threading.Lock()


def _make(workspace: Path, executable: str) -> ConfinedRunner | None:
    from kimi_cli.kernel.restrict import Unavailable, create_ruleset, enter_domain, landlock_abi
    from kimi_cli.kernel.rights import EXECUTE, READ_DIR, READ_FILE, WRITE_FILE, fs_rights_for_abi

    abi = landlock_abi()
    if abi < 1:
        return None
    grants = [(str(workspace), READ_FILE | READ_DIR), (executable, READ_FILE | EXECUTE)]
    for path in SYSTEM_READ:
        if os.path.islink(path) or not os.path.exists(path):
            continue
        if os.path.isdir(path):
            grants.append((path, READ_FILE | READ_DIR | EXECUTE))
        else:
            grants.append((path, READ_FILE | (WRITE_FILE if path == "/dev/null" else 0)))
    try:  # enter_domain is the one routine that enters a Landlock domain
        fd = create_ruleset(abi, fs_rights_for_abi(abi), 0, 0, grants)
    except (Unavailable, OSError):
        return None

    def enter() -> None:  # on the worker thread only: no_new_privs and the domain are per thread
        enter_domain(fd)

    runner = ConfinedRunner(fd, enter)
    try:  # the first use proves it: an rg that is a wrapper script (a pyenv shim) needs more than this grants
        probe = runner.call(partial(subprocess.run, [executable, "--version"], capture_output=True, timeout=10))
        if probe.returncode == 0:
            return runner
    except (OSError, subprocess.SubprocessError, RuntimeError):
        pass
    runner.close()
    return None


def confined_runner(workspace: Path, executable: str) -> ConfinedRunner | None:
    """The confined thread for reading `workspace` with `executable`, or None where it cannot work here."""
    key = (str(workspace), os.path.realpath(executable))
    with _lock:
        if key in _runners:
            _runners.move_to_end(key)
            return _runners[key]
        runner = _make(workspace, key[1])
        _runners[key] = runner
        while len(_runners) > MAX_RUNNERS:
            _, old = _runners.popitem(last=False)
            if old is not None:
                old.close()
        return runner
