"""The model client against real HTTP on loopback: streaming, retries, what is not retried, dropped fields."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from kimi_cli.config import Endpoint, RetrySettings
from kimi_cli.errors import ConfigError, KimiError, ProviderUnavailable
from kimi_cli.llm.assemble import StreamCallbacks
from kimi_cli.llm.failures import ConnectFailure, ContextOverflow, error_message
from kimi_cli.llm.provider import ChatProvider
from kimi_cli.llm.transport import HttpxTransport, import_httpx

from raw_sse_server import RawSSEServer

KEY = "sk-unit-SECRET-0123456789abcdef"
MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "Probe", "description": "d", "parameters": {"type": "object"}}}]


@pytest.fixture
def server() -> Iterator[Any]:
    from scripted_server import ScriptedModelServer

    srv = ScriptedModelServer().start()
    yield srv
    srv.stop()


def provider_for(base_url: str, waits: list[float], retries: int = 3, **kw: Any) -> ChatProvider:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    endpoint = Endpoint("openai", base_url, "kimi-test", KEY)
    retry = RetrySettings(max_retries=retries, base_delay=0.01, max_delay=0.05, request_timeout=10)
    return ChatProvider(endpoint, retry, "session-1", sleep=sleep, **kw)


def complete(provider: ChatProvider, callbacks: StreamCallbacks | None = None) -> Any:
    async def main() -> Any:
        try:
            return await provider.complete(MESSAGES, TOOLS, callbacks, max_tokens=512)
        finally:
            await provider.aclose()

    return asyncio.run(main())


def test_text_reasoning_tool_calls_and_usage_arrive_as_one_completion(server: Any) -> None:
    server.add({"reasoning": "let me think", "text": "calling", "chunk_size": 3,
                "tool_calls": [{"id": "Probe:0", "name": "Probe", "arguments": {"key": "v"}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 7, "cached_tokens": 40}})  # fmt: skip
    seen: list[str] = []
    callbacks = StreamCallbacks(on_text=seen.append, on_reasoning=seen.append)
    completion = complete(provider_for(server.base_url, []), callbacks)
    assert (completion.text, completion.reasoning) == ("calling", "let me think")
    got = [(c.id, c.name, json.loads(c.arguments)) for c in completion.tool_calls]
    assert got == [("Probe:0", "Probe", {"key": "v"})]
    assert completion.usage.as_dict() == {"prompt_tokens": 50, "completion_tokens": 7, "cached_tokens": 40,
                                          "total_tokens": 57}  # fmt: skip
    assert "".join(seen) == "let me thinkcalling"
    sent = server.requests[0]
    assert sent["max_tokens"] == 512 and sent["tool_choice"] == "auto" and sent["messages"] == MESSAGES
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"


def test_a_429_is_retried_after_the_servers_retry_after(server: Any) -> None:
    server.add({"error": 429, "retry_after": 2}, {"text": "ok"})
    waits: list[float] = []
    told: list[tuple[int, float, str]] = []
    callbacks = StreamCallbacks(on_retry=lambda a, w, e: told.append((a, w, e)))
    assert complete(provider_for(server.base_url, waits), callbacks).text == "ok"
    assert waits == [2.0] and told[0][:2] == (1, 2.0) and "HTTP 429" in told[0][2]


def test_a_stream_that_breaks_off_is_asked_again(server: Any) -> None:
    server.add({"text": "partial answer that breaks", "break_after": 2}, {"text": "whole"})
    waits: list[float] = []
    assert complete(provider_for(server.base_url, waits)).text == "whole"
    assert len(waits) == 1 and 0.005 <= waits[0] <= 0.01


def test_retries_run_out_into_provider_unavailable(server: Any) -> None:
    server.add(*({"error": 503} for _ in range(3)))
    waits: list[float] = []
    with pytest.raises(ProviderUnavailable, match="unavailable after 3 attempts"):
        complete(provider_for(server.base_url, waits, retries=2))
    assert len(waits) == 2


def test_an_empty_stream_twice_is_taken_for_a_context_overflow(server: Any) -> None:
    server.add({"empty": True}, {"empty": True})
    with pytest.raises(ContextOverflow, match="empty answer twice"):
        complete(provider_for(server.base_url, []))


@pytest.mark.parametrize(
    ("status", "message", "error", "words"),
    [
        (401, "invalid key", ConfigError, "refused the API key"),
        (404, "model not found", ConfigError, "answered 404"),
        (400, "maximum context length exceeded", ContextOverflow, "maximum context length"),
        (400, "temperature must be 0.6", ConfigError, "rejected the request"),
    ],
)
def test_what_a_retry_cannot_fix_stops_at_once_with_a_clear_error(
    server: Any, status: int, message: str, error: type[Exception], words: str
) -> None:
    server.add({"error": status, "body": {"error": {"message": message}}})
    waits: list[float] = []
    with pytest.raises(error, match=words):
        complete(provider_for(server.base_url, waits))
    assert waits == [] and len(server.requests) == 1


def test_an_optional_field_the_server_rejects_is_dropped_and_the_request_sent_again(server: Any) -> None:
    server.add({"error": 400, "body": {"error": {"message": "unknown parameter: tool_choice"}}}, {"text": "ok"})
    assert complete(provider_for(server.base_url, [])).text == "ok"
    assert "tool_choice" in server.requests[0] and "tool_choice" not in server.requests[1]


def test_the_api_key_never_shows_in_an_error(server: Any) -> None:
    server.add({"error": 400, "body": {"error": {"message": f"bad request from {KEY}"}}})
    with pytest.raises(ConfigError) as caught:
        complete(provider_for(server.base_url, []))
    assert KEY not in str(caught.value) and "[REDACTED]" in str(caught.value)


def test_a_refused_local_port_is_retried_and_then_reported_as_unavailable() -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waits: list[float] = []
    with pytest.raises(ProviderUnavailable, match="unavailable after 3 attempts"):
        complete(provider_for(f"http://127.0.0.1:{port}/v1", waits, retries=2))
    assert len(waits) == 2


class FailingTransport:
    """A transport whose connection always fails the same way (the network layer, not our code)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.calls = 0

    async def stream(self, body: bytes, fields: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        self.calls += 1
        raise ConnectFailure(self.kind, f"{self.kind} failure")
        yield {}  # pragma: no cover  (makes this an async generator)

    async def aclose(self) -> None:
        return None


def test_a_remote_host_that_refuses_twice_is_given_up_and_an_unknown_host_at_once() -> None:
    provider = provider_for("https://api.example.invalid/v1", [], retries=5)
    refusing = FailingTransport("refused")
    provider._transport = refusing
    with pytest.raises(ProviderUnavailable, match="refused the connection"):
        complete(provider)
    assert refusing.calls == 2
    provider = provider_for("https://api.example.invalid/v1", [], retries=5)
    provider._transport = FailingTransport("dns")
    with pytest.raises(ProviderUnavailable, match=r"cannot resolve 'api\.example\.invalid'"):
        complete(provider)


@pytest.mark.parametrize(
    "pieces",
    [
        [
            b'data: {"choices":[{"index":0,"delta":{"content":"he"}}]}\r\n\r\n',
            b'data: {"choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"}]}\r\n\r\n',
        ],
        [
            b": keep-alive\r",
            b"event: chunk\rid: 1\rretry: 100\r",
            b'data: {"choices":[{"index":0,"delta":{"content":"he"}}]}\r\r',
            b'data: {"choices":[{"index":0,\ndata: "delta":{"content":"llo"},"finish_reason":"stop"}]}\n\n',
        ],
        [
            b'data: {"choices":[{"index":0,"delta":{"content":"he"}}]}\n\n',
            b'data: {"choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"}]}',
        ],
    ],
    ids=["crlf", "cr-comments-fields-multiline", "no-final-blank-line"],
)
def test_the_transport_reads_every_sse_framing_the_standard_allows(pieces: list[bytes]) -> None:
    server = RawSSEServer(pieces)
    try:
        assert complete(provider_for(server.base_url, [])).text == "hello"
    finally:
        server.stop()


def test_the_openai_sdk_transport_streams_the_same_answer_and_maps_errors(server: Any) -> None:
    server.add({"text": "via sdk", "usage": {"prompt_tokens": 3, "completion_tokens": 2}}, {"error": 401})
    provider = provider_for(server.base_url, [], transport="openai")
    assert complete(provider).text == "via sdk"
    with pytest.raises(ConfigError, match="refused the API key"):
        complete(provider_for(server.base_url, [], transport="openai"))


def test_an_error_body_gives_the_servers_own_words() -> None:
    assert error_message(b'{"error": {"message": "slow down"}}') == "slow down"
    assert error_message(b'{"message": "flat"}') == "flat"
    assert error_message(b'{"error": "just text"}') == "just text"
    assert error_message(b"<html>oops</html>") == "<html>oops</html>"
    assert error_message(b"") == "(empty body)"
    assert error_message(b"[1, 2]") == "[1, 2]"


def test_httpx_comes_without_its_optional_feature_probes() -> None:
    httpx = import_httpx()
    assert httpx is import_httpx() and hasattr(httpx, "AsyncClient")
    transport = HttpxTransport("https://example.invalid/v1", "EMPTY", 5)
    assert "authorization" not in transport.headers and transport.url.endswith("/chat/completions")
    asyncio.run(transport.aclose())


def test_retrying_after_a_kimi_error_is_not_attempted(server: Any) -> None:
    server.add({"error": 401})
    with pytest.raises(KimiError):
        complete(provider_for(server.base_url, []))
    assert len(server.requests) == 1
