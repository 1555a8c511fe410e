"""Helpers for whole-process benchmarks: timing runs, medians, and markdown tables."""

from __future__ import annotations

import json
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def kimi_bin() -> str:
    candidate = Path(sys.executable).parent / "kimi"
    return str(candidate) if candidate.exists() else (shutil.which("kimi") or "kimi")


def scripted_server(
    work: Path, script: list[dict[str, Any]], stats: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """The scripted model server (tests/scripted_server.py) on loopback, answering `script` (written to
    work/script.json), with its request timeline in `stats` when given: (the process, its base URL)."""
    (work / "script.json").write_text(json.dumps(script))
    port = work / "port"
    argv = [
        sys.executable,
        str(ROOT / "tests" / "scripted_server.py"),
        str(work / "script.json"),
        "--port-file",
        str(port),
    ]
    for f in (port, stats):
        if f is not None:
            f.unlink(missing_ok=True)
    if stats is not None:
        argv += ["--stats-file", str(stats)]
    server = subprocess.Popen(argv)
    while not port.exists() or not port.read_text():
        time.sleep(0.01)
    return server, port.read_text()


def stop(server: subprocess.Popen[bytes]) -> None:
    server.send_signal(signal.SIGTERM)
    server.wait()


def first_request(work: Path, repo: Path, env: dict[str, str]) -> float:
    """Seconds from starting `kimi -p hi` in `repo` to its first model request reaching the server."""
    stats = work / "stats.json"
    server, base = scripted_server(work, [{"text": "ok"}], stats)
    run_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": base, "KIMI_API_KEY": "bench-key"}
    started = time.time()
    subprocess.run([kimi_bin(), "-p", "hi", "--yolo"], cwd=repo, env=run_env, check=True, capture_output=True)
    stop(server)
    return float(json.loads(stats.read_text())["timeline"][0][0]) - started


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
