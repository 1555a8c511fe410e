"""A whole `kimi -p` against a server whose answer goes silent mid-stream (issue 41): it is asked once, not
`max_retries` more times, the run ends with exit 5 and a message that says what happened and what to do, and the
session is kept for `kimi -p -c` to go on with."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import result_json, run_kimi

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 1.0  # [retry] request_timeout for these runs


def short_timeout(env: dict[str, str]) -> dict[str, str]:
    config = Path(env["HOME"]) / ".kimi" / "config.toml"
    config.write_text(config.read_text().replace("[retry]\n", f"[retry]\nrequest_timeout = {TIMEOUT}\n", 1))
    return env


def test_a_stalled_stream_is_tried_once_and_the_session_continues_after(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    env = short_timeout(env)  # the default transport; tests/unit/test_stalled_stream.py has httpx and openai too
    server.add({"text": "I will start by reading calc.py and", "chunk_size": 6, "stall_after": 3, "stall": 3 * TIMEOUT},
               {"text": "a second whole generation"})  # fmt: skip
    proc = run_kimi(["-p", "fix calc.py", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 5, proc.stderr
    assert len(server.requests) == 1  # not asked again in full
    assert "retry" not in proc.stderr.lower().replace("[retry]", "")  # no `kimi: retry N` line
    result = result_json(proc)
    assert result["reason"] == "provider_unavailable" and result["error"]["type"] == "provider_unavailable"
    message = result["message"]
    assert f"request_timeout = {TIMEOUT:g} s" in message and "generating too slowly" in message
    assert "[retry] request_timeout" in message and "kimi -c" in message
    assert "request_timeout" in proc.stderr

    server.script.clear()
    server.add({"text": "done now"})
    again = run_kimi(["-c", "-p", "go on", "--output-format", "json"], repo, env, server)
    assert again.returncode == 0, again.stderr
    assert result_json(again)["session_id"] == result["session_id"]
    sent = [m.get("content") for m in server.requests[-1]["messages"] if m.get("role") == "user"]
    assert any("fix calc.py" in str(c) for c in sent) and any("go on" in str(c) for c in sent)


def test_a_server_that_is_slow_to_answer_is_still_retried(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add({"text": "late", "hang": 2 * TIMEOUT}, {"error": 500}, {"text": "answered"})
    proc = run_kimi(["-p", "hi", "--output-format", "json"], repo, short_timeout(env), server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["text"] == "answered" and len(server.requests) == 3
