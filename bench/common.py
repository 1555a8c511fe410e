"""Helpers for whole-process benchmarks: timing runs, medians, and markdown tables."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def kimi_bin() -> str:
    candidate = Path(sys.executable).parent / "kimi"
    return str(candidate) if candidate.exists() else (shutil.which("kimi") or "kimi")


def time_process(argv: list[str], runs: int, warmup: int = 2, **kwargs: object) -> list[float]:
    """Wall seconds of each run of a whole process (after warm-up runs that are thrown away)."""
    times = []
    for i in range(warmup + runs):
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
        if i >= warmup:
            times.append(time.perf_counter() - started)
    return times


def time_calls(fn: Callable[[], object], runs: int, warmup: int = 3) -> list[float]:
    times = []
    for i in range(warmup + runs):
        started = time.perf_counter()
        fn()
        if i >= warmup:
            times.append(time.perf_counter() - started)
    return times


def commit_all(root: Path, message: str) -> None:
    """git init + add + commit, with a fixed identity (bench machines may have none)."""
    import os

    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}  # fmt: skip
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", message]):
        subprocess.run(["git", *cmd], cwd=root, env=env, check=True)


def median(values: list[float]) -> float:
    return statistics.median(values)


def table(headers: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)
