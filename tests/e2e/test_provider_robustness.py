"""Fail fast where retrying cannot help; survive servers that bend the protocol; overflow compacts once."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi, tool_call

TRANSPORTS = pytest.mark.parametrize("transport", ["direct", "httpx", "openai"])


def with_transport(env: dict, transport: str) -> dict:
    return {**env, "KIMI_TRANSPORT": transport}


@TRANSPORTS
def test_an_unresolvable_host_stops_at_once_with_exit_5(repo: Path, env: dict, transport: str) -> None:
    env = {**with_transport(env, transport), "KIMI_BASE_URL": "http://no-such-host.invalid/v1", "KIMI_API_KEY": "k"}
    started = time.monotonic()
    proc = run_kimi(["-p", "hi", "--provider", "openai"], repo, env)
    assert proc.returncode == 5, proc.stderr
    assert "cannot resolve 'no-such-host.invalid'" in proc.stderr and "KIMI_BASE_URL" in proc.stderr
    assert time.monotonic() - started < 10
    assert "retry" not in proc.stderr


def own_address() -> str | None:
    """This machine's own non-loopback address: a closed port there refuses like a remote host would."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


def test_a_refused_connection_to_a_remote_host_stops_after_two_tries(repo: Path, env: dict) -> None:
    address = own_address()
    if address is None:
        pytest.fail("this machine has no non-loopback IPv4 address to stand in for a remote host")
    env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": f"http://{address}:9/v1", "KIMI_API_KEY": "k"}
    proc = run_kimi(["-p", "hi", "--output-format", "stream-json"], repo, env)
    assert proc.returncode == 5
    assert "refused the connection" in proc.stderr
    retries = [line for line in proc.stdout.splitlines() if '"type": "retry"' in line]
    assert len(retries) == 1


@pytest.mark.parametrize(
    ("status", "needle"),
    [(401, "KIMI_API_KEY"), (403, "KIMI_API_KEY"), (404, "model name 'kimi-k3.1-pro'")],
)
def test_auth_and_not_found_stop_at_once_with_exit_2(
    repo: Path, env: dict, server: ScriptedModelServer, status: int, needle: str
) -> None:
    server.add({"error": status}, {"text": "never reached"})
    proc = run_kimi(["-p", "hi"], repo, env, server)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and f"HTTP {status}" in proc.stderr
    assert len(server.requests) == 1


OVERFLOW = {"error": 400, "body": {"error": {"message": "This model's maximum context length is 8192 tokens"}}}


def test_a_context_overflow_compacts_once_and_retries(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    # The first request: nothing to summarise yet, so no summary is asked; the history is fitted to the window
    # the refusal named (a smaller pack) and sent once more, the task verbatim (issue 41)
    server.add(OVERFLOW, {"text": "answered after compaction"})
    proc = run_kimi(["-p", "explain calc.py", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["text"] == "answered after compaction"
    last = server.requests[1]["messages"]
    assert len(server.requests) == 2 and last[-1]["content"] == "explain calc.py"


def test_a_second_overflow_exits_1_with_the_servers_words(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(OVERFLOW, OVERFLOW)
    proc = run_kimi(["-p", "hi", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 1
    assert "maximum context length is 8192 tokens" in proc.stderr
    assert len(server.requests) == 2  # once more, never a loop


@TRANSPORTS
def test_an_empty_stream_is_retried_once_then_treated_as_an_overflow(
    repo: Path, env: dict, server: ScriptedModelServer, transport: str
) -> None:
    server.add({"empty": True}, {"empty": True}, {"text": "fine now"})  # nothing to summarise: no summary asked
    proc = run_kimi(["-p", "hi", "--output-format", "json"], repo, with_transport(env, transport), server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["text"] == "fine now"
    assert len(server.requests) == 3


@TRANSPORTS
def test_a_function_name_repeated_in_every_chunk_is_not_joined(
    repo: Path, env: dict, server: ScriptedModelServer, transport: str
) -> None:
    call = tool_call("ReadFile", {"path": "calc.py", "n_lines": 5}, "r1")
    server.add({"tool_calls": [call], "repeat_name": True, "chunk_size": 4}, {"text": "read it"})
    proc = run_kimi(["-p", "read", "--output-format", "json"], repo, with_transport(env, transport), server)
    assert proc.returncode == 0, proc.stderr
    tool_msg = server.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and "def add" in tool_msg["content"]


def test_missing_usage_is_told_once_and_estimated(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    call = tool_call("ReadFile", {"path": "calc.py"}, "r1")
    server.add({"tool_calls": [call], "no_usage": True}, {"text": "ok", "no_usage": True})
    proc = run_kimi(["-p", "read", "--output-format", "stream-json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    notices = [e for e in events if e["type"] == "notice" and "withheld" not in e["message"]]  # the start notice aside
    assert len(notices) == 1 and "no token usage" in notices[0]["message"]
    assert events[-1]["usage"]["prompt_tokens"] > 0


def test_requests_carry_tool_choice_and_a_max_tokens_cap(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "hi"})
    proc = run_kimi(["-p", "hi"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    body = server.requests[0]
    assert body["tool_choice"] == "auto" and body["tools"]
    assert 256 <= body.get("max_completion_tokens", body.get("max_tokens", 0)) <= 32_768  # per model family


def test_a_rejected_optional_field_is_dropped_and_the_request_retried(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    reject = {"error": 400, "body": {"error": {"message": "Unrecognized request argument: prompt_cache_key"}}}
    server.add(reject, {"text": "ok"}, {"text": "ok"})
    proc = run_kimi(["-p", "hi"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "prompt_cache_key" in server.requests[0] and "prompt_cache_key" not in server.requests[1]


def test_a_short_dummy_key_does_not_mangle_messages(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"error": 400, "body": {"error": {"message": "unknown parameter; x marks the spot"}}})
    proc = run_kimi(["-p", "hi"], repo, {**env, "KIMI_API_KEY": "x"}, server)
    assert "x marks the spot" in proc.stderr and "[REDACTED]" not in proc.stderr
