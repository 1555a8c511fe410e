"""A timed-out generation is not asked again in full (issue 41): `request_timeout` is an idle timeout, a stream
that goes silent after its first chunk stops the step with a clear error, and what fails before the answer
begins (a timeout waiting for the headers or the first chunk, a 500) keeps its retries. Both transports, against
the scripted server on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from kimi_cli.config import Endpoint, RetrySettings
from kimi_cli.errors import ProviderUnavailable
from kimi_cli.llm.assemble import StreamCallbacks
from kimi_cli.llm.provider import ChatProvider

from scripted_server import ScriptedModelServer

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
TIMEOUT = 0.5  # [retry] request_timeout in these tests: every wait below is a small multiple of it
TRANSPORTS = pytest.mark.parametrize("transport", ["direct", "httpx", "openai"])

pytestmark = pytest.mark.timeout(20)


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    srv = ScriptedModelServer().start()
    yield srv
    srv.stop()


def complete(server: ScriptedModelServer, transport: str, waits: list[float], shown: list[str] | None = None) -> Any:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    endpoint = Endpoint("openai", server.base_url, "kimi-test", "EMPTY")
    retry = RetrySettings(max_retries=3, base_delay=0.01, max_delay=0.05, request_timeout=TIMEOUT)
    provider = ChatProvider(endpoint, retry, "session-1", sleep=sleep, transport=transport)
    callbacks = StreamCallbacks(on_text=(shown if shown is not None else []).append)

    async def main() -> Any:
        try:
            return await provider.complete(MESSAGES, [], callbacks, max_tokens=64)
        finally:
            await provider.aclose()

    return asyncio.run(main())


@TRANSPORTS
def test_a_stream_that_goes_silent_mid_answer_is_not_asked_again(server: ScriptedModelServer, transport: str) -> None:
    server.add({"text": "the first words of a long answer", "chunk_size": 8, "stall_after": 3, "stall": 3 * TIMEOUT},
               {"text": "a whole second generation"})  # fmt: skip
    waits: list[float] = []
    shown: list[str] = []
    with pytest.raises(ProviderUnavailable) as caught:
        complete(server, transport, waits, shown)
    assert len(server.requests) == 1 and waits == []  # tried once: no retry, no backoff
    message = str(caught.value)
    assert server.base_url in message and f"request_timeout = {TIMEOUT:g} s" in message
    assert "generating too slowly" in message and "overloaded" in message
    assert "raise [retry] request_timeout" in message.lower() and "kimi -c" in message
    assert "".join(shown).startswith("the first")  # what had come was shown before the stop


@TRANSPORTS
def test_a_long_answer_that_keeps_streaming_is_not_cut(server: ScriptedModelServer, transport: str) -> None:
    # 11 chunks 0.1 s apart: ~1.1 s in all, over twice the timeout, never silent for it.
    server.add({"text": "x" * 40, "chunk_size": 5, "delay": 0.1})
    assert complete(server, transport, []).text == "x" * 40
    assert len(server.requests) == 1


@TRANSPORTS
def test_a_timeout_before_the_answer_begins_is_still_retried(server: ScriptedModelServer, transport: str) -> None:
    server.add(
        {"text": "late", "hang": 3 * TIMEOUT},  # no headers in time
        {"text": "late", "stall_after": 0, "stall": 3 * TIMEOUT},  # headers, then no first chunk in time
        {"error": 500},
        {"text": "answered"},
    )
    waits: list[float] = []
    assert complete(server, transport, waits).text == "answered"
    assert len(server.requests) == 4 and len(waits) == 3
