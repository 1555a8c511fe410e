"""Finding and running ripgrep: linear-time regexes in a child process, with a timeout and bounded output."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.sandbox.base import kill_group
from kimi_cli.tools.errors import ToolError

MAX_LINE_CHARS = 500  # each output line is cut here
INSTALL_HINT = (
    "ripgrep (`rg`) is not installed: it comes with kimi's `ripgrep` dependency (pip install ripgrep), "
    "or from your system (apt-get install ripgrep, brew install ripgrep)"
)


def find_rg(exclude: tuple[Path, ...] = ()) -> str:
    """The `rg` beside this interpreter (the ripgrep wheel puts it there), else on PATH outside `exclude`
    and every other folder a sandboxed command may write."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    from kimi_cli.hostsafe.programs import host_which

    found = host_which("rg", exclude)  # never an `rg` from a folder sandboxed commands may write
    if found is None:
        raise ToolError(INSTALL_HINT)
    return found


@dataclass
class RgOutput:
    lines: list[str]
    stopped_early: bool  # max_lines reached: rg was stopped
    timed_out: bool
    exit_code: int | None
    stderr: str


async def run_rg(
    argv: list[str],
    cwd: Path,
    max_lines: int,
    timeout: float,
    max_line_chars: int = MAX_LINE_CHARS,
    on_start: Callable[[int], None] | None = None,
) -> RgOutput:
    """Run rg, keep at most max_lines lines (each cut to max_line_chars), kill it past the timeout.
    `on_start` gets rg's pid (its process group), for a caller on another thread to kill it on cancel."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        limit=1 << 20,
    )
    if on_start is not None:
        on_start(proc.pid)
    lines: list[str] = []
    stopped = timed_out = False

    async def read_stdout() -> None:
        nonlocal stopped
        assert proc.stdout is not None
        while True:
            try:
                raw = await proc.stdout.readline()
            except ValueError:  # a line longer than the stream limit: take a piece of it and move on
                raw = await proc.stdout.read(1 << 16)
            if not raw:
                return
            lines.append(raw.decode("utf-8", errors="replace").rstrip("\n")[:max_line_chars])
            if len(lines) >= max_lines:
                stopped = True
                return

    async def read_stderr() -> bytes:
        assert proc.stderr is not None
        return await proc.stderr.read(20_000)

    err_task = asyncio.ensure_future(read_stderr())
    try:
        await asyncio.wait_for(read_stdout(), timeout)
    except TimeoutError:
        timed_out = True
    except asyncio.CancelledError:
        kill_group(proc.pid)
        raise
    if stopped or timed_out:  # enough lines, or too slow: rg goes now
        kill_group(proc.pid)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), 5)
    stderr = b""
    with contextlib.suppress(TimeoutError):
        stderr = await asyncio.wait_for(err_task, 1)
    return RgOutput(lines, stopped, timed_out, proc.returncode, stderr.decode("utf-8", errors="replace"))
