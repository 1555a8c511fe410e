"""ChatProvider: streams chat completions from any OpenAI-compatible endpoint, with retries that can help.

Retried: 429 (Retry-After honoured), 5xx, resets, a timeout before the answer begins (connecting, or waiting
for its headers and first chunk), streams that end without `finish_reason`, an empty stream (once). Not
retried: an unresolvable host, 401/403/404/400; a refused connection stops after 2 tries to a remote host,
4 quick ones (at most 1.5 s apart) to this machine. A 400 that names an optional field we sent drops the
field, once.

`request_timeout` is an idle timeout on both transports (kimi_cli/llm/http1.py, httpx): connecting takes at
most 30 s of it, then each wait for the server (its headers, then every read of the stream) at most all of
it. An answer that keeps streaming is never cut for being long. One that goes silent for `request_timeout`
after its first chunk is not asked again (that would start the whole generation over on a server already
too slow for the timeout, up to `max_retries` times, issue 41): the step stops with ProviderUnavailable
(exit 5) saying to raise `[retry] request_timeout` or lighten the server's load; the session is kept.

Model-specific fields come from the model table (kimi_cli/llm/models.py): the reasoning effort goes as
`reasoning_effort` to K3-family models and as `thinking` to K2.x, and to no other model; the answer budget
goes as `max_completion_tokens` to the K3 family and as `max_tokens` elsewhere, on every request
(kimi_cli/llm/window.py). A server's "too long" that names its window teaches the provider that window.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from kimi_cli.config import Endpoint, RetrySettings
from kimi_cli.errors import AuthError, ConfigError, ExitCode, KimiError, ProviderUnavailable
from kimi_cli.llm.assemble import ChunkAssembler, StreamCallbacks
from kimi_cli.llm.failures import ConnectFailure, ContextOverflow, Failure, HTTPFailure, StreamStalled, classify
from kimi_cli.llm.late_tools import fold_late_tools
from kimi_cli.llm.models import ModelInfo, lookup, reasoning_fields, with_context
from kimi_cli.llm.retry import backoff_delay, parse_retry_after
from kimi_cli.llm.server_tokens import ServerTokenizer, for_endpoint
from kimi_cli.llm.transport import Transport, transport_for
from kimi_cli.llm.types import Completion, Message
from kimi_cli.llm.window import answer_budget, answer_fields, window_in
from kimi_cli.llm.wire import EncodedHistory
from kimi_cli.util.logs import get_logger
from kimi_cli.util.redact import MIN_SECRET_LEN, register_secret, shown_url

__all__ = ["ChatProvider", "StreamCallbacks"]

OPTIONAL_FIELDS = (
    "prompt_cache_key",
    "stream_options",
    "tool_choice",
    "max_completion_tokens",  # before max_tokens: "max_tokens" is in its name
    "max_tokens",
    "parallel_tool_calls",
    "reasoning_effort",
    "thinking",
)
TOLD_FIELDS = ("reasoning_effort", "thinking")  # the user chose these: say so when the server refuses one
ANSWER_FIELDS = ("max_completion_tokens", "max_tokens")  # dropped only when refused, never for "too large"
BODY_BYTES_PER_TOKEN = 3  # a caller that counted nothing: the body's size is a rough, high count
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
REFUSED_TRIES_REMOTE = 2
REFUSED_TRIES_LOCAL = 4  # a refused connection to this machine: a server that may be starting up
REFUSED_MAX_WAIT = 1.5  # seconds between those tries
log = get_logger("llm")


class ChatProvider:
    """The one model client: Moonshot, a local vLLM engine and other OpenAI-compatible servers."""

    def __init__(
        self,
        endpoint: Endpoint,
        retry: RetrySettings,
        session_id: str,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        transport: str = "direct",
        extra_body: dict[str, Any] | None = None,
        model_info: ModelInfo | None = None,
        effort: str | None = None,
        cache_scope: str | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.retry = retry
        self.session_id = session_id
        self.model_info = model_info or lookup(endpoint.model, endpoint.provider)
        self.effort = effort  # None: send no reasoning field at all
        # The prompt cache key: per workspace and prefix, so a new session over the same pack can hit the
        # cache on its first request. None: the session id (one cache per session, as before).
        self.cache_scope = cache_scope
        self._cache_key: tuple[object, str] | None = None
        self.on_notice: Callable[[str], None] = lambda _m: None  # told once per refused field or odd effort
        self._told: set[str] = set()
        self.first_usage: Any = None  # the Usage of the first answer (did the first request hit the cache?)
        self._sleep = sleep
        self.transport_name = transport
        self._transport: Transport | None = None
        self.history = EncodedHistory()
        self.dropped: set[str] = set()  # optional fields this endpoint rejected
        self.extra_body = dict(extra_body or {})
        self.model_seconds = 0.0
        self._tokenizer: ServerTokenizer | None = None
        self.on_window: Callable[[int], None] = lambda _n: None  # a window learned from a server's "too long"
        self.last_budget: int | None = None  # the answer budget of the last request (tests, the debug log)
        register_secret(endpoint.api_key)

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            self._transport = transport_for(
                self.transport_name, self.endpoint.base_url, self.endpoint.api_key, self.retry.request_timeout
            )
        return self._transport

    @property
    def server_tokens(self) -> ServerTokenizer | None:
        """The server's own tokenizer (llama-server and vLLM answer /tokenize); None for Moonshot's API,
        which has none, and once the server showed it has none."""
        if self.endpoint.provider == "moonshot":
            return None
        if self._tokenizer is None:
            # shared with the session's first pack (kimi_cli.agent.bootstrap), which it may have counted
            self._tokenizer = for_endpoint(self.endpoint.base_url, self.endpoint.api_key, self.endpoint.model)
        return self._tokenizer if self._tokenizer.available else None

    @property
    def window(self) -> int:
        return self.model_info.context_window

    def learn_window(self, window: int, source: str) -> bool:
        """A window the server stated: smaller than what kimi believed, it wins (and is remembered for the
        next session); never grows here. True when it changed anything."""
        if window >= self.window:
            return False
        log.debug("the server's window is %d tokens (%s), not %d", window, source, self.window)
        self.model_info = with_context(self.model_info, window)
        from kimi_cli.llm.endpoint_info import remember_window

        remember_window(self.endpoint, window, source)
        self.on_window(window)
        return True

    def redact(self, text: str) -> str:
        """The key, as a whole token, becomes [REDACTED] (short dummy keys are not secrets); the base URL
        becomes shown_url (an error may quote the URL it asked)."""
        text = text.replace(self.endpoint.base_url, self.shown_url)
        key = self.endpoint.api_key
        if not key or key == "EMPTY" or len(key) < MIN_SECRET_LEN:
            return text
        return re.sub(rf"(?<![\w-]){re.escape(key)}(?![\w-])", "[REDACTED]", text)

    @property
    def shown_url(self) -> str:
        """The base URL as messages name it: a password in it (https://user:pw@proxy/v1) or a secret-named
        query parameter hidden (kimi -p's error, its JSON result and a notice reach logs and CI output)."""
        return shown_url(self.endpoint.base_url)

    def set_model(self, endpoint: Endpoint, model_info: ModelInfo) -> None:
        """`/model NAME`: later requests go to this model, with its own fields."""
        self.endpoint = endpoint
        self.model_info = model_info
        self.dropped.discard("reasoning_effort")
        self.dropped.discard("thinking")

    def reasoning(self) -> dict[str, Any]:
        """The effort as this model takes it (nothing for a model that takes none)."""
        if self.effort is None:
            return {}
        out, note = reasoning_fields(self.model_info, self.effort)
        if note:
            self._tell(f"effort:{self.model_info.id}:{self.effort}", note)
        return out

    def cache_key(self, messages: list[Message]) -> str:
        """Workspace + the system message's bytes (the pack): the same repository and pack give the same
        key across sessions. Hashed once per system-message object."""
        if self.cache_scope is None or not messages or messages[0].get("role") != "system":
            return self.session_id
        first = messages[0]
        if self._cache_key is None or self._cache_key[0] is not first:
            digest = hashlib.sha256(self.cache_scope.encode("utf-8", "replace") + b"\0")
            digest.update(str(first.get("content", "")).encode("utf-8", "replace"))
            self._cache_key = (first, "kimi-" + digest.hexdigest()[:32])
        return self._cache_key[1]

    def fields(self, tools: bool, max_tokens: int | None, messages: list[Message] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.endpoint.model, "stream": True}
        out["stream_options"] = {"include_usage": True}
        out["prompt_cache_key"] = self.cache_key(messages or [])
        if tools:
            out["tool_choice"] = "auto"
        if max_tokens:
            out.update(answer_fields(self.model_info, max_tokens, self.dropped))
        out.update(self.reasoning())
        out.update(self.extra_body)
        return {k: v for k, v in out.items() if k not in self.dropped}

    def _tell(self, key: str, message: str) -> None:
        if key not in self._told:
            self._told.add(key)
            self.on_notice(message)

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        callbacks: StreamCallbacks | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """Send one request and stream the answer; retry the whole request on transient faults."""
        cb = callbacks or StreamCallbacks()
        last = ""
        refused = empty = 0
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                completion = await self._stream_once(messages, tools, cb, max_tokens)
                if self.first_usage is None and tools:  # the agent's first request (a summary has no tools)
                    self.first_usage = completion.usage
                return completion
            except (KimiError, asyncio.CancelledError):
                raise
            except Exception as exc:
                failure = classify(exc)
                last = self.redact(failure.summary)
                log.debug("request failed (attempt %d): %s", attempt + 1, last)
                if self._drop_rejected_field(exc):
                    continue
                if failure.kind == "empty":
                    empty += 1
                    if empty > 1:
                        raise ContextOverflow(
                            f"{self.shown_url} returned an empty answer twice; this usually means the "
                            "request did not fit the model's context window"
                        ) from None
                if failure.kind == "refused":
                    refused += 1
                    # Nothing listens there: a remote host is not coming back soon; a local server may be
                    # starting, so a few quick tries (~4 s in all), never the whole backoff budget (~43 s).
                    tries = REFUSED_TRIES_LOCAL if self._is_local() else REFUSED_TRIES_REMOTE
                    if refused >= tries:
                        raise ProviderUnavailable(self._explain(failure, last)) from None
                if not failure.retryable:
                    raise self._stop(failure, last) from None
                if attempt >= self.retry.max_retries:
                    break
                after = parse_retry_after(failure.retry_after)
                wait = (
                    after if after is not None else backoff_delay(attempt, self.retry.base_delay, self.retry.max_delay)
                )
                if failure.kind == "refused":
                    wait = min(wait, REFUSED_MAX_WAIT)
                cb.on_retry(attempt + 1, wait, last)
                await self._sleep(wait)
                attempt += 1
            finally:
                self.model_seconds += time.perf_counter() - started
        raise ProviderUnavailable(
            f"model endpoint {self.shown_url} unavailable after {attempt + 1} attempts; last error: {last}"
        )

    def rough_budget(self, messages: list[Message], tools: list[dict[str, Any]]) -> int:
        """An answer budget for a caller that counted nothing (a subagent): the body's bytes as a high
        token count, the rest of the window up to the model's cap, and never under its smallest answer."""
        body = self.history.body({}, messages, tools)
        prompt = len(body) // BODY_BYTES_PER_TOKEN
        found = answer_budget(self.model_info, self.window, prompt)
        return found if found is not None else self.model_info.answer_room(self.window)

    async def _stream_once(
        self, messages: list[Message], tools: list[dict[str, Any]], cb: StreamCallbacks, max_tokens: int | None
    ) -> Completion:
        # Every request carries an answer budget: the caller's (the agent counts its requests), within the
        # model's cap; a caller that counted nothing, or asked for the whole window (a subagent), gets one
        # from the body's size.
        if not self.model_info.tools_in_messages:  # a history from a K3 model: its late tools join the block
            messages, tools = fold_late_tools(messages, tools)
        budget = min(max_tokens, self.model_info.max_output) if max_tokens else None
        if budget is None or budget >= self.window:
            budget = min(budget or self.model_info.max_output, self.rough_budget(messages, tools))
        self.last_budget = budget
        fields = self.fields(bool(tools), budget, messages)
        body = self.history.body(fields, messages, tools)
        log.debug(
            "POST %s/chat/completions model=%s messages=%d (%d newly encoded) bytes=%d fields=%s",
            self.endpoint.base_url,
            self.endpoint.model,
            len(messages),
            self.history.encoded_last,
            len(body),
            sorted(fields),
        )
        if self.history.encoded_last and messages and log.isEnabledFor(logging.DEBUG):
            log.debug("last message sent: %s", self.redact(str(messages[-1])[:2000]))
        assembler = ChunkAssembler(cb)
        try:
            async for chunk in self.transport.stream(body, fields):
                assembler.feed(chunk)
        except ConnectFailure as exc:
            if exc.kind == "timeout" and assembler.chunks:  # the answer had begun: not asked again in full
                raise StreamStalled(assembler.chunks, exc.detail) from exc
            raise
        return assembler.finish()

    def _drop_rejected_field(self, exc: BaseException) -> bool:
        if not isinstance(exc, HTTPFailure) or exc.status not in (400, 422):
            return False
        if window_in(exc.message)[0] is not None:
            return False  # "'max_tokens' is too large: ... maximum context length is 4096": a size, not a refusal
        for name in OPTIONAL_FIELDS:
            if name in TOLD_FIELDS + ANSWER_FIELDS and not _refuses(exc.message, name):
                continue  # "thinking is enabled but reasoning_content is missing" names it without refusing it
            if name == "max_tokens" and "max_completion_tokens" in exc.message:
                continue  # the other field's name holds this one's
            if name not in self.dropped and name in exc.message:
                self.dropped.add(name)
                log.debug("the server rejected %s; sending requests without it from now on", name)
                if name in TOLD_FIELDS:
                    self._tell(
                        f"dropped:{name}",
                        f"{self.shown_url} refused the {name} field ({self.redact(short_text(exc.message))}); "
                        f"the effort setting is not sent for the rest of this session",
                    )
                return True
        return False

    def _is_local(self) -> bool:
        host = urlsplit(self.endpoint.base_url).hostname or ""
        return host in LOCAL_HOSTS or host.startswith("127.")

    def _explain(self, failure: Failure, last: str) -> str:
        url = self.shown_url
        host = urlsplit(self.endpoint.base_url).hostname or url  # the shown form's [hidden] reads as IPv6
        if failure.kind == "dns":
            return (
                f"cannot resolve {host!r} (base URL {url}): check --base-url / KIMI_BASE_URL, "
                f"and that this machine can reach the network ({last})"
            )
        if failure.kind == "refused":
            return f"{url} refused the connection: is the server running on that host and port? ({last})"
        return f"request to {url} failed: {last}"

    def _stop(self, failure: Failure, last: str) -> KimiError:
        url, model = self.shown_url, self.endpoint.model
        from kimi_cli.hostsafe.secrets import named

        key_vars = named(self.endpoint.provider)
        if failure.kind == "auth":
            return AuthError(f"{url} refused the API key ({last}). Check {key_vars} or api_key in the config.")
        if failure.kind == "not_found":
            return ConfigError(
                f"{url} answered 404 ({last}). Check the base URL (it usually ends in /v1) and the model name "
                f"{model!r} (--model / KIMI_MODEL)."
            )
        if failure.kind == "overflow":
            window, asked = window_in(last)
            if window is not None:
                self.learn_window(window, "the server's own error")
            return ContextOverflow(last, window, asked)
        if failure.kind == "bad_request":
            return ConfigError(
                f"{url} rejected the request ({last}). Check the model name {model!r} and the server's limits."
            )
        if failure.kind in ("dns", "refused"):
            return ProviderUnavailable(self._explain(failure, last))
        if failure.kind == "stalled":
            timeout = f"{self.retry.request_timeout:g}"
            return ProviderUnavailable(
                f"{url} stopped mid-answer: {last} ([retry] request_timeout = {timeout} s). The server is "
                "generating too slowly for that timeout, or is overloaded; the request was not sent again, since "
                "that would start the whole generation over. Raise [retry] request_timeout in ~/.kimi/config.toml, "
                "or lighten the server's load, then continue the session (kimi -c)."
            )
        return KimiError(f"request to {url} failed: {last}", ExitCode.ERROR)

    async def aclose(self) -> None:
        if self._transport is not None:
            await self._transport.aclose()


REFUSAL_WORDS = re.compile(
    r"unrecogni[sz]ed|unknown|unsupported|not supported|does not support|invalid|not allowed|not permitted|"
    r"unexpected|extra (field|input|argument)s?|not (a )?valid",
    re.IGNORECASE,
)


def _refuses(message: str, field: str) -> bool:
    """Whether an error message refuses `field` itself, rather than merely mentioning the word (Moonshot's
    "thinking is enabled but reasoning_content is missing" is about the history, not the field)."""
    if "reasoning_content" in message:
        return False
    return bool(re.search(rf"(?<![\w.]){re.escape(field)}(?![\w])", message)) and bool(REFUSAL_WORDS.search(message))


def short_text(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
