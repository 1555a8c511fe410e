"""Per-phase start-up timing for users: `KIMI_TIMING=1 kimi -p ...` prints, on stderr at exit, where the time of
the run went (wall and CPU per phase), so a start-up regression can be seen without a profiler (issue 47).

A phase is marked where it ends (`mark("config")`); each line shows the time since the previous mark. The first
line is the interpreter and the imports before kimi's entry ran, read from the kernel's record of the process
(its start time and CPU so far in /proc/self/stat). Costs nothing when KIMI_TIMING is unset: `mark` returns
at the first test.
"""

from __future__ import annotations

import os
import sys
import time

ENABLED = os.environ.get("KIMI_TIMING", "") not in ("", "0")
_marks: list[tuple[str, float, float]] = []  # (phase, wall clock, process CPU) where the phase ended
_origin: tuple[float, float] | None = None  # (wall, CPU) at the process's start, where /proc has it


def _process_start() -> tuple[float, float] | None:
    """The wall-clock time the process started and its CPU at that point (0), from /proc (Linux)."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
        ticks = os.sysconf("SC_CLK_TCK")
        started_ago = uptime - int(fields[19]) / ticks  # field 22 of stat: start time, in ticks since boot
    except (OSError, ValueError, IndexError):
        return None
    return time.time() - started_ago, 0.0


def mark(phase: str) -> None:
    """The end of `phase`: kept, and printed with the others at exit."""
    if not ENABLED:
        return
    global _origin
    if not _marks and _origin is None:
        _origin = _process_start()
        import atexit

        atexit.register(report)
    _marks.append((phase, time.time(), time.process_time()))


def first(phase: str) -> None:
    """`mark`, the first time only (a phase inside a loop: the first request, the first answer)."""
    if ENABLED and all(name != phase for name, _, _ in _marks):
        mark(phase)


def lines() -> list[str]:
    """The report's lines: each phase's wall and CPU milliseconds, then the total."""
    out: list[str] = []
    previous = _origin if _origin is not None else (_marks[0][1], _marks[0][2]) if _marks else None
    if previous is None:
        return out
    first = previous
    for phase, wall, cpu in _marks:
        out.append(f"{phase:<28} {1000 * (wall - previous[0]):8.1f} ms  cpu {1000 * (cpu - previous[1]):8.1f} ms")
        previous = (wall, cpu)
    out.append(
        f"{'total':<28} {1000 * (previous[0] - first[0]):8.1f} ms  cpu {1000 * (previous[1] - first[1]):8.1f} ms"
    )
    return out


def report() -> None:
    """Written at exit: stderr only, so a --output-format json run's stdout stays the result alone."""
    mark("exit")
    try:
        sys.stderr.write("kimi timing (wall since the previous phase; CPU of this process):\n")
        sys.stderr.write("".join(f"  {line}\n" for line in lines()))
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
