"""OpenTelemetry from a whole `kimi -p` run to a loopback OTLP/HTTP receiver that decodes the protobuf: the
span tree (session > turn > model request and tool call) with tokens, cost, tool, exit code, approval and
duration; metrics for tokens, cost, tool failures and retries; no prompt or output text unless
`log_prompts = true`; off (and nothing of OpenTelemetry imported) without an endpoint."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from otlp_receiver import OtlpReceiver

from scripted_server import ScriptedModelServer
from support import TEST_KEY, result_json, run_kimi, tool_call

PROMPT = "fix the adder PROMPT-CANARY-7731"
ANSWER = "ANSWER-CANARY-4419: add() adds now"
OUTPUT = "OUTPUT-CANARY-9052"
USAGE = {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 600}
K31 = {"KIMI_MODEL": "kimi-k3.1-pro"}


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    found = OtlpReceiver().start()
    yield found
    found.stop()


def scripted_run(repo: Path, env: dict, server: ScriptedModelServer, extra_env: dict[str, str]) -> dict:
    server.add(
        {"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")], "usage": USAGE},
        {"error": 429, "retry_after": 0},
        {"tool_calls": [tool_call("Shell", {"command": f"echo {OUTPUT}; exit 3"}, "s1")], "usage": USAGE},
        {"text": ANSWER, "usage": USAGE},
    )
    proc = run_kimi(["-p", PROMPT, "--output-format", "json"], repo, {**env, **K31, **extra_env}, server)
    assert proc.returncode == 0, proc.stderr
    return result_json(proc)


def test_a_run_exports_the_span_tree_with_tokens_cost_and_tools(
    repo: Path, env: dict, server: ScriptedModelServer, receiver: OtlpReceiver
) -> None:
    result = scripted_run(repo, env, server, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    [session] = receiver.named("kimi.session")
    [turn] = receiver.named("kimi.turn")
    requests = receiver.named("kimi.model_request")
    tools = receiver.named("kimi.tool_call")
    assert session.parent_id == "" and session.attributes["session.id"] == result["session_id"]
    assert session.resource["service.name"] == "kimi"
    assert turn.parent_id == session.span_id
    assert len(requests) == 3 and all(r.parent_id == turn.span_id for r in requests)
    assert [t.parent_id for t in tools] == [turn.span_id, turn.span_id]
    assert {s.trace_id for s in receiver.spans} == {session.trace_id}
    first = requests[0].attributes
    assert first["gen_ai.request.model"] == "kimi-k3.1-pro"
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.cache_read.input_tokens"],
            first["gen_ai.usage.output_tokens"]) == (1000, 600, 50)  # fmt: skip
    assert first["kimi.cost_usd"] == pytest.approx((400 * 2.0 + 600 * 0.2 + 50 * 10.0) / 1e6)
    assert requests[1].attributes["kimi.retries"] == 1 and requests[1].events[0][0] == "retry"
    read, shell = tools
    assert read.attributes["gen_ai.tool.name"] == "ReadFile" and read.attributes["kimi.tool.is_error"] is False
    assert shell.attributes["kimi.tool.exit_code"] == 3 and shell.attributes["kimi.tool.is_error"] is True
    assert shell.attributes["kimi.approval"] == "auto" and shell.attributes["kimi.tool.duration_ms"] > 0
    assert shell.status == 2  # STATUS_CODE_ERROR
    assert turn.attributes["kimi.reason"] == "done" and turn.attributes["kimi.steps"] == 3
    assert turn.start_ns <= requests[0].start_ns and requests[-1].end_ns <= turn.end_ns <= session.end_ns
    # Metrics: the counters the issue names.
    assert receiver.total("kimi.tokens", **{"kimi.token.type": "input"}) == 3 * 400
    assert receiver.total("kimi.tokens", **{"kimi.token.type": "cached"}) == 3 * 600
    assert receiver.total("kimi.tokens", **{"kimi.token.type": "output"}) == 3 * 50
    assert receiver.total("kimi.cost") == pytest.approx(result["cost"]["total_usd"], abs=1e-6)
    assert receiver.total("kimi.tool.failures", **{"gen_ai.tool.name": "Shell"}) == 1
    assert receiver.total("kimi.retries") == 1
    # No text of the session: not the prompt, the answer, a tool's output, nor the API key.
    raw = b"".join(receiver.raw)
    for text in (PROMPT, ANSWER, OUTPUT, "PROMPT-CANARY", TEST_KEY):
        assert text.encode() not in raw
    assert all("authorization" not in h for h in receiver.headers)


def test_log_prompts_sends_the_text_redacted(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer, receiver: OtlpReceiver
) -> None:
    config = home / ".kimi" / "config.toml"
    config.write_text(config.read_text() + f'\n[telemetry]\notlp_endpoint = "{receiver.url}"\nlog_prompts = true\n'
                      'otlp_headers = { "x-team-token" = "team-token-SECRET-1234" }\n')  # fmt: skip
    scripted_run(repo, env, server, {})
    [turn] = receiver.named("kimi.turn")
    assert turn.attributes["kimi.prompt"] == PROMPT and turn.attributes["kimi.response"] == ANSWER
    shell = receiver.named("kimi.tool_call")[1]
    assert OUTPUT in shell.attributes["kimi.tool.output"] and "exit 3" in shell.attributes["kimi.tool.arguments"]
    assert TEST_KEY.encode() not in b"".join(receiver.raw)
    assert all(h.get("x-team-token") == "team-token-SECRET-1234" for h in receiver.headers)


def test_without_an_endpoint_nothing_is_sent_and_the_sdk_is_not_loaded(
    repo: Path, env: dict, server: ScriptedModelServer, receiver: OtlpReceiver
) -> None:
    scripted_run(repo, env, server, {})
    assert receiver.raw == []
    code = (
        "import sys\nfrom kimi_cli.telemetry import open_telemetry\n"
        "print(open_telemetry(None, None, {}), sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None []"


def test_otel_sdk_disabled_turns_it_off(
    repo: Path, env: dict, server: ScriptedModelServer, receiver: OtlpReceiver
) -> None:
    scripted_run(repo, env, server, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SDK_DISABLED": "true"})
    assert receiver.raw == []
