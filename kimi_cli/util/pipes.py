"""A command whose reader went away (`kimi undo --list | head -3`) ends quietly, not with a traceback."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
CLOSED_PIPE_EXIT = 1  # what click answers for Typer's commands on a closed stdout: one code for every command


def survives_closed_pipe(fn: Callable[..., T]) -> Callable[..., T | int]:
    """Run `fn`, then flush stdout while the closed pipe can still be caught here (a short listing sits in the
    buffer until exit, where Python would print 'Exception ignored'); on a closed pipe, point stdout at
    /dev/null so that nothing else tries, and return CLOSED_PIPE_EXIT."""

    @functools.wraps(fn)
    def wrapper(*args: object, **kwargs: object) -> T | int:
        try:
            result = fn(*args, **kwargs)
            sys.stdout.flush()
            return result
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, sys.stdout.fileno())
            finally:
                os.close(devnull)
            return CLOSED_PIPE_EXIT

    return wrapper
