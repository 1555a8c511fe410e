"""ChatProvider: streams chat completions from any OpenAI-compatible endpoint, with retries."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kimi_cli.config import Endpoint, RetrySettings
from kimi_cli.errors import ConfigError, KimiError, ProviderUnavailable
from kimi_cli.llm.retry import StreamIncomplete, backoff_delay, classify
from kimi_cli.llm.types import Completion, Message, ToolCallRequest, Usage

if TYPE_CHECKING:
    from openai import AsyncOpenAI


@dataclass
class StreamCallbacks:
    """Where streamed pieces go while an answer arrives."""

    on_text: Callable[[str], None] = lambda _d: None
    on_reasoning: Callable[[str], None] = lambda _d: None
    on_retry: Callable[[int, float, str], None] = lambda _a, _w, _e: None


class ChatProvider:
    """The one model client: Moonshot, a local vLLM engine and other OpenAI-compatible servers."""

    def __init__(
        self,
        endpoint: Endpoint,
        retry: RetrySettings,
        session_id: str,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.endpoint = endpoint
        self.retry = retry
        self.session_id = session_id
        self._sleep = sleep
        self._client: AsyncOpenAI | None = None
        self.model_seconds = 0.0

    def _get_client(self) -> AsyncOpenAI:
        if self._client is None:
            from openai import AsyncOpenAI  # heavy: imported only when a request is made

            self._client = AsyncOpenAI(
                api_key=self.endpoint.api_key,
                base_url=self.endpoint.base_url,
                max_retries=0,  # we retry ourselves, with Retry-After and stream breaks included
                timeout=self.retry.request_timeout,
            )
        return self._client

    def redact(self, text: str) -> str:
        key = self.endpoint.api_key
        return text.replace(key, "[REDACTED]") if key and key != "EMPTY" else text

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], callbacks: StreamCallbacks | None = None
    ) -> Completion:
        """Send one request and stream the answer; retry the whole request on transient faults."""
        cb = callbacks or StreamCallbacks()
        last = ""
        for attempt in range(self.retry.max_retries + 1):
            started = time.perf_counter()
            try:
                return await self._stream_once(messages, tools, cb)
            except (KimiError, asyncio.CancelledError):
                raise
            except Exception as exc:
                failure = classify(exc)
                last = self.redact(failure.summary)
                if failure.auth:
                    raise ConfigError(
                        f"{self.endpoint.base_url} refused the API key ({last}). "
                        "Check KIMI_API_KEY / MOONSHOT_API_KEY or api_key in ~/.kimi/config.toml."
                    ) from None
                if not failure.retryable:
                    raise KimiError(f"request to {self.endpoint.base_url} failed: {last}") from None
                if attempt == self.retry.max_retries:
                    break
                if failure.retry_after is not None:
                    wait = failure.retry_after
                else:
                    wait = backoff_delay(attempt, self.retry.base_delay, self.retry.max_delay)
                cb.on_retry(attempt + 1, wait, last)
                await self._sleep(wait)
            finally:
                self.model_seconds += time.perf_counter() - started
        raise ProviderUnavailable(
            f"model endpoint {self.endpoint.base_url} unavailable after {self.retry.max_retries + 1} "
            f"attempts; last error: {last}"
        )

    async def _stream_once(
        self, messages: list[Message], tools: list[dict[str, Any]], cb: StreamCallbacks
    ) -> Completion:
        client = self._get_client()
        # The history and tool schemas go in extra_body: they are plain JSON already, and the client's
        # typed-dict transform of `messages` costs ~30 ms per request on a long session (measured).
        body: dict[str, Any] = {"messages": messages, "prompt_cache_key": self.session_id}
        if tools:
            body["tools"] = tools
        stream = await client.chat.completions.create(
            model=self.endpoint.model,
            messages=[],
            stream=True,
            stream_options={"include_usage": True},
            extra_body=body,
        )
        acc = _Accumulator()
        async with stream:
            async for chunk in stream:
                acc.feed(chunk, cb)
        return acc.finish()


class _Accumulator:
    """Assembles streamed chunks (text, reasoning, tool-call deltas, usage) into a Completion."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()

    def feed(self, chunk: Any, cb: StreamCallbacks) -> None:
        if chunk.usage is not None:
            self._read_usage(chunk.usage)
        for choice in chunk.choices or []:
            extra = choice.model_extra or {}
            if extra.get("usage"):  # Moonshot puts usage inside the last choice
                self._read_usage(extra["usage"])
            delta = choice.delta
            if delta is not None:
                dextra = delta.model_extra or {}
                reasoning = dextra.get("reasoning_content") or dextra.get("reasoning")
                if reasoning:
                    self.reasoning.append(reasoning)
                    cb.on_reasoning(reasoning)
                if delta.content:
                    self.text.append(delta.content)
                    cb.on_text(delta.content)
                for tc in delta.tool_calls or []:
                    slot = self.calls.setdefault(tc.index, {"id": None, "name": "", "args": []})
                    if tc.id and not slot["id"]:
                        slot["id"] = tc.id
                    if tc.function is not None:
                        if tc.function.name:
                            slot["name"] += tc.function.name
                        if tc.function.arguments:
                            slot["args"].append(tc.function.arguments)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def _read_usage(self, raw: Any) -> None:
        data = raw if isinstance(raw, dict) else raw.model_dump()
        details = data.get("prompt_tokens_details") or {}
        cached = data.get("cached_tokens") or (details.get("cached_tokens") if isinstance(details, dict) else 0)
        self.usage = Usage(
            prompt_tokens=int(data.get("prompt_tokens") or 0),
            completion_tokens=int(data.get("completion_tokens") or 0),
            cached_tokens=int(cached or 0),
        )

    def finish(self) -> Completion:
        if self.finish_reason is None:
            raise StreamIncomplete("no finish_reason before the stream ended")
        calls = [
            ToolCallRequest(id=slot["id"] or f"call_{index}", name=slot["name"], arguments="".join(slot["args"]))
            for index, slot in sorted(self.calls.items())
        ]
        return Completion(
            text="".join(self.text),
            reasoning="".join(self.reasoning),
            tool_calls=calls,
            finish_reason=self.finish_reason,
            usage=self.usage,
        )
