"""Nothing outlives kimi: after `kill -9` of kimi, no command, background task or container is left.

On landlock the spawner sees kimi's socket close (and gets PR_SET_PDEATHSIG) and kills every command's
process group; on bwrap, --die-with-parent and the pid namespace; on Docker, the container's pid 1 reads a
stdin that kimi held open, so it exits, and AutoRemove deletes the container.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest
from sandbox_fixtures import backends, kimi_containers, sandbox_flags

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable, processes_with, tool_call, wait_until


@pytest.mark.parametrize("backend", backends())
def test_kill_9_of_kimi_leaves_nothing_running(
    backend: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    flags = sandbox_flags(backend, home)
    n = 3000 + secrets.randbelow(900) * 4  # sleep durations no other test uses: they mark our processes
    background = f"(sleep {n}; echo late) & sleep {n + 1}"
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": background, "background": True}, "bg")]},
        {"tool_calls": [tool_call("Shell", {"command": f"sleep {n + 2} & sleep {n + 3}"}, "fg")]},
    )
    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    proc = subprocess.Popen([*kimi_executable(), "-p", "x", "--output-format", "stream-json", *flags], cwd=repo,
                            env=full, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            event = json.loads(line)
            if event["type"] == "tool_call" and f"sleep {n + 3}" in event["arguments"]:
                break
        wanted = [n + 2, n + 3] if backend == "docker" else [n, n + 1, n + 2, n + 3]  # docker: no background
        wait_until(lambda: all(processes_with(f"sleep {d}") for d in wanted), 30, "the commands to start")
        if backend == "docker":
            assert kimi_containers(proc.pid)
    finally:
        proc.kill()  # SIGKILL: kimi gets no chance to clean up
        proc.wait()
    wait_until(lambda: not any(processes_with(f"sleep {n + i}") for i in range(4)), 30, "every command to die")
    if backend == "landlock":
        wait_until(lambda: not [p for p in processes_with("spawner_main.py") if _argv_has(p, str(proc.pid))], 10,
                   "the spawner to exit")  # fmt: skip
    if backend == "docker":
        wait_until(lambda: not kimi_containers(proc.pid), 30, "the container to be removed")


def _argv_has(pid: int, value: str) -> bool:
    try:
        return value.encode() in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
