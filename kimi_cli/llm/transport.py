"""Transports: how a request body reaches the server and chunks come back, as plain dicts.

`DirectTransport` (default, kimi_cli.llm.http1: the standard library only) and `HttpxTransport` (with a proxy set, or
`transport = "httpx"`) post the incrementally encoded body and decode SSE themselves (kimi_cli.llm.sse): no per-step
re-encoding, and no `openai` import (~0.6 s) at start-up. `OpenAITransport` goes through the official
`openai` SDK, for servers where its quirks handling is wanted (`[provider] transport = "openai"`).
Both raise only the failures in kimi_cli.llm.failures.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from kimi_cli.llm.failures import ConnectFailure, HTTPFailure, StreamIncomplete, connect_failure, error_message
from kimi_cli.llm.sse import SSEDecoder, chunk_from_event

if TYPE_CHECKING:
    import httpx
    from openai import AsyncOpenAI


class Transport(Protocol):
    def stream(self, body: bytes, fields: dict[str, Any]) -> AsyncIterator[dict[str, Any]]: ...

    async def aclose(self) -> None: ...


def transport_for(name: str, base_url: str, api_key: str, timeout: float) -> Transport:
    """The transport a `transport` setting names; "direct" becomes httpx when a proxy variable is set."""
    if name == "openai":
        return OpenAITransport(base_url, api_key, timeout)
    from kimi_cli.llm.http1 import DirectTransport, proxy_configured

    if name == "httpx" or proxy_configured():
        return HttpxTransport(base_url, api_key, timeout)
    return DirectTransport(base_url, api_key, timeout)


# Imported by httpx and httpcore only to probe for optional features we never use: httpcore looks for trio
# (~80 ms when it is installed; we run on asyncio) and httpx loads its own command line (click, rich,
# pygments: ~40 ms). Blocked while httpx is first imported, so `kimi -p` reaches its first request sooner.
IMPORT_PROBES = ("trio", "httpx._main")


def import_httpx() -> Any:
    """httpx (and httpcore), imported without their optional-feature probes."""
    import sys

    if "httpx" in sys.modules and "httpcore" in sys.modules:
        return sys.modules["httpx"]
    blocked = [name for name in IMPORT_PROBES if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # `import name` now fails fast
    try:
        import httpcore  # noqa: F401  (httpx imports it only when a client is built)
        import httpx
    finally:
        for name in blocked:
            del sys.modules[name]
    return httpx


def _map_httpx(exc: BaseException) -> BaseException:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return ConnectFailure("timeout", str(exc) or type(exc).__name__)
    if isinstance(exc, httpx.ConnectError):
        return connect_failure(exc)
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return StreamIncomplete(f"connection dropped: {exc or type(exc).__name__}")
    if isinstance(exc, httpx.TransportError):
        return ConnectFailure("connect", str(exc) or type(exc).__name__)
    return exc


class HttpxTransport:
    """POST /chat/completions with httpx, and a small SSE reader."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if api_key and api_key != "EMPTY":
            self.headers["authorization"] = f"Bearer {api_key}"
        self.timeout = timeout
        self._client: httpx.AsyncClient | None = None

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            httpx = import_httpx()
            # Plain http needs no TLS context; building the default one loads the CA bundle (~35 ms).
            # The timeout is per read (and write): an idle limit, as DirectTransport's, never the whole answer.
            verify = not self.url.startswith("http://")
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=min(30.0, self.timeout)), trust_env=True, verify=verify
            )
        return self._client

    async def stream(self, body: bytes, fields: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        httpx = import_httpx()
        client = self._get_client()
        from kimi_cli.util import timing

        timing.first("first request built")
        try:
            async with client.stream("POST", self.url, content=body, headers=self.headers) as response:
                timing.first("first answer's headers")
                if response.status_code >= 400:
                    raw = await response.aread()
                    raise HTTPFailure(response.status_code, error_message(raw), response.headers.get("retry-after"))
                decoder = SSEDecoder()
                async for text in response.aiter_text():
                    for event in decoder.feed(text):
                        chunk = chunk_from_event(event)
                        if chunk is not None:
                            yield chunk
                for event in decoder.close():
                    chunk = chunk_from_event(event)
                    if chunk is not None:
                        yield chunk
        except httpx.HTTPError as exc:
            raise _map_httpx(exc) from exc

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class OpenAITransport:
    """The same request through the official openai SDK (slower: it re-encodes the body every call)."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self._client: AsyncOpenAI | None = None

    def _get_client(self) -> AsyncOpenAI:
        if self._client is None:
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(
                api_key=self.api_key or "EMPTY", base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
        return self._client

    async def stream(self, body: bytes, fields: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        import openai

        client = self._get_client()
        data = json.loads(body)
        model = data.pop("model")
        data.pop("stream", None)
        try:
            stream = await client.chat.completions.create(model=model, messages=[], stream=True, extra_body=data)
            async with stream:
                async for chunk in stream:
                    yield chunk.to_dict()
        except openai.APIStatusError as exc:
            headers = exc.response.headers if exc.response is not None else {}
            raise HTTPFailure(exc.status_code, _openai_message(exc), headers.get("retry-after")) from exc
        except openai.APITimeoutError as exc:
            raise ConnectFailure("timeout", "request timed out") from exc
        except openai.APIConnectionError as exc:
            raise connect_failure(exc) from exc
        except openai.APIError as exc:
            raise StreamIncomplete(f"bad response: {exc}") from exc
        except Exception as exc:
            mapped = _map_httpx(exc)
            if mapped is exc:
                raise
            raise mapped from exc

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None


def _openai_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
    return str(getattr(exc, "message", exc))
