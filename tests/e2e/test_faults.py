"""Provider faults: 429 with Retry-After, 500, a broken stream, and an endpoint that never recovers."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call

TRANSPORTS = pytest.mark.parametrize("transport", ["direct", "httpx", "openai"])
WRITE = tool_call("WriteFile", {"path": "log.txt", "content": "x\n", "mode": "append"}, "WriteFile:0")


@TRANSPORTS
def test_429_with_retry_after_is_waited_out_and_the_task_finishes(
    repo: Path, env: dict, server: ScriptedModelServer, transport: str
) -> None:
    server.add({"error": 429, "retry_after": "1"}, {"tool_calls": [WRITE]}, {"text": "done"})
    started = time.monotonic()
    proc = run_kimi(
        ["-p", "append", "--output-format", "stream-json"], repo, {**env, "KIMI_TRANSPORT": transport}, server
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    retries = [json.loads(line) for line in proc.stdout.splitlines() if '"retry"' in line]
    assert retries and retries[0]["wait_s"] == 1.0 and "429" in retries[0]["error"]
    assert elapsed >= 1.0
    assert (repo / "log.txt").read_text() == "x\n"


@TRANSPORTS
def test_500_is_retried_and_no_tool_runs_twice(
    repo: Path, env: dict, server: ScriptedModelServer, transport: str
) -> None:
    server.add({"tool_calls": [WRITE]}, {"error": 500}, {"error": 503}, {"text": "done"})
    proc = run_kimi(["-p", "append", "--output-format", "json"], repo, {**env, "KIMI_TRANSPORT": transport}, server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["reason"] == "done"
    assert (repo / "log.txt").read_text() == "x\n"
    assert len(server.requests) == 4


@TRANSPORTS
def test_broken_stream_is_retried_and_no_tool_runs_twice(
    repo: Path, env: dict, server: ScriptedModelServer, transport: str
) -> None:
    server.add(
        {"tool_calls": [WRITE], "break_after": 3},
        {"tool_calls": [WRITE]},
        {"text": "all good", "break_after": 1},
        {"text": "all good"},
    )
    proc = run_kimi(["-p", "append", "--output-format", "json"], repo, {**env, "KIMI_TRANSPORT": transport}, server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["text"] == "all good"
    assert (repo / "log.txt").read_text() == "x\n"  # written once, not twice
    assert len(server.requests) == 4


def test_endpoint_down_after_retries_exits_5_naming_the_endpoint(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add(*[{"error": 500} for _ in range(7)])
    proc = run_kimi(["-p", "hi", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 5
    assert server.base_url in proc.stderr and "HTTP 500" in proc.stderr
    assert result_json(proc)["reason"] == "provider_unavailable"


def test_connection_refused_exits_5(repo: Path, env: dict) -> None:
    env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": "http://127.0.0.1:9/v1", "KIMI_API_KEY": "k"}
    proc = run_kimi(["-p", "hi"], repo, env)
    assert proc.returncode == 5
    assert "http://127.0.0.1:9/v1" in proc.stderr and "connection" in proc.stderr


def test_non_retryable_400_is_an_error_not_a_retry_loop(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"error": 400, "body": {"error": {"message": "text content is empty"}}})
    proc = run_kimi(["-p", "hi"], repo, env, server)
    assert proc.returncode == 2
    assert "text content is empty" in proc.stderr
    assert len(server.requests) == 1
