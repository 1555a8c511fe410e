"""The Docker backend's lifeline.

The container's pid 1 reads a stdin that kimi holds open; when kimi dies, dockerd closes it and the
container goes. Unguarded, pid 1 ran as the commands' own user (root in most images), and a command
could `exec 3>/proc/1/fd/0`: holding a writer on pid 1's stdin pipe, it kept pid 1 from ever seeing the end
of input, so after a `kill -9` of kimi the container, the command and the writable workspace mount lived
on. It could also write /proc/1/mem. Now pid 1 runs as a uid no command has (KEEPER_USER), and without
CAP_SYS_PTRACE a command cannot open /proc/1/fd or /proc/1/mem; commands still run as the image's user.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, backends, kimi_containers, make_rig, need_probe, sandbox_flags

from scripted_server import ScriptedModelServer
from support import TEST_KEY, kimi_executable, processes_with, tool_call, wait_until

DOCKER = [b for b in backends() if b == "docker"]


@pytest.fixture(params=DOCKER)
def docker_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Rig:
    rig, _ = make_rig(tmp_path, request.param)
    yield rig  # type: ignore[misc]
    rig.close()


def test_pid_1_is_out_of_a_commands_reach(docker_rig: Rig) -> None:
    probe = need_probe(docker_rig)
    result = docker_rig.run(
        f"{probe} mem-write 1; (exec 3>/proc/1/fd/0) && echo held-stdin; ls /proc/1/fd/ && echo listed; echo done"
    )
    assert "memory-written" not in result.output and "held-stdin" not in result.output, result.output
    assert "listed" not in result.output and "done" in result.output
    legit = docker_rig.run("id -u && echo work > w.txt && cat w.txt && sh -c 'sleep 1 & wait' && echo ok")
    assert legit.output.startswith("exit code: 0") and "work" in legit.output and "ok" in legit.output
    assert (docker_rig.ws / "w.txt").read_text() == "work\n"


@pytest.mark.parametrize("backend", DOCKER)
def test_holding_pid_1s_stdin_does_not_outlive_a_kill_9_of_kimi(
    backend: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    flags = sandbox_flags(backend, home)
    n = 5000 + secrets.randbelow(900) * 4
    server.add({"tool_calls": [tool_call("Shell", {"command": f"exec 3>/proc/1/fd/0; sleep {n}"}, "hold")]})
    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    proc = subprocess.Popen([*kimi_executable(), "-p", "x", "--output-format", "stream-json", *flags], cwd=repo,
                            env=full, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if json.loads(line)["type"] == "tool_call":
                break
        wait_until(lambda: processes_with(f"sleep {n}"), 30, "the command to start")
        assert kimi_containers(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    wait_until(lambda: not kimi_containers(proc.pid), 30, "the container to be removed")
    wait_until(lambda: not processes_with(f"sleep {n}"), 30, "the command to die")
