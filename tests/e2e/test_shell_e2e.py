"""The Shell tool through the real `kimi -p`: escapes fail and the session goes on; cleanup; approvals."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from sandbox_fixtures import kimi_containers, sandbox_flags

from scripted_server import ScriptedModelServer
from support import (
    TEST_KEY,
    kimi_executable,
    result_json,
    run_for_peak_rss,
    run_kimi,
    tool_call,
    wait_until,
)


def shell(command: str, call_id: str, timeout: int | None = None) -> dict:
    args: dict = {"command": command}
    if timeout:
        args["timeout"] = timeout
    return {"tool_calls": [tool_call("Shell", args, call_id)]}


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_escape_attempts_fail_and_the_session_goes_on(
    backend: str, repo: Path, env: dict, home: Path, tmp_path: Path, server: ScriptedModelServer
) -> None:
    flags = sandbox_flags(backend, home)
    outside = tmp_path / "outside"
    outside.mkdir()
    server.add(
        shell(f"echo x > {outside}/escaped", "s1"),
        shell("env", "s2"),
        shell("echo fixed > calc.py && cat calc.py", "s3"),
        {"text": "done despite the refusals"},
    )
    proc = run_kimi(["-p", "try", "--output-format", "json", *flags], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["text"] == "done despite the refusals"
    results = [m["content"] for m in server.requests[3]["messages"] if m["role"] == "tool"]
    assert not results[0].startswith("exit code: 0") and not (outside / "escaped").exists()
    assert "PATH=" in results[1] and TEST_KEY not in results[1] and "KIMI_API_KEY" not in results[1]
    assert results[2].startswith("exit code: 0") and (repo / "calc.py").read_text() == "fixed\n"


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
def test_output_flood_keeps_agent_rss_under_200_mb(
    backend: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    flags = sandbox_flags(backend, home)
    server.add(shell("yes | head -c 50000000", "f1"), {"text": "ok"})
    full_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    code, peak_kib = run_for_peak_rss([*kimi_executable(), "-p", "flood", *flags], repo, full_env)
    assert code == 0
    assert peak_kib < 200 * 1024, f"peak RSS {peak_kib} KiB"
    flood_result = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert "bytes of output cut" in flood_result and len(flood_result) < 40_000


def test_docker_container_is_network_none_and_removed_after_sigterm(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    flags = sandbox_flags("docker", home)
    server.add(shell("sleep 30", "d1"), {"text": "never"})
    full_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    proc = subprocess.Popen(
        [*kimi_executable(), "-p", "sleep", *flags],
        cwd=repo,
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    new = wait_until(lambda: kimi_containers(proc.pid), timeout=60, what="its container")
    mode = subprocess.run(
        ["docker", "inspect", "-f", "{{.HostConfig.NetworkMode}}", new[0]], capture_output=True, text=True
    ).stdout.strip()
    assert mode == "none"
    top = ["docker", "top", new[0]]
    wait_until(lambda: "sleep 30" in subprocess.run(top, capture_output=True, text=True).stdout, what="the exec")
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert proc.returncode == 4
    assert kimi_containers(proc.pid) == []


def test_sandbox_none_refuses_commands_without_yolo(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(shell("touch made-it", "n1"), {"text": "ok"})
    proc = run_kimi(["-p", "x", "--sandbox", "none"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("without isolation") == 1
    assert not (repo / "made-it").exists()
    refusal = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert "--yolo" in refusal


def test_sandbox_none_with_yolo_runs_commands(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(shell("touch made-it", "n1"), {"text": "ok"})
    proc = run_kimi(["-p", "x", "--sandbox", "none", "--yolo"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "made-it").exists()


def test_unusable_docker_is_a_clear_usage_error(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    env = {**env, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    proc = run_kimi(["-p", "x", "--sandbox", "docker"], repo, env, server)
    assert proc.returncode == 2
    assert "--sandbox docker is not usable" in proc.stderr and "start a Docker engine" in proc.stderr
    assert server.requests == []


def test_shell_timeout_via_kimi_reports_it(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(shell("sleep 600", "t1", timeout=1), {"text": "ok"})
    started = time.monotonic()
    proc = run_kimi(["-p", "x"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 15
    result = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert result.startswith("timed out after 1 s")
