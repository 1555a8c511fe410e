"""What can go wrong talking to a model server, in our own terms, whichever HTTP client was used.

Transports turn their library's exceptions into these, and word a server's error answer with error_message;
the retry policy reads only these.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass

from kimi_cli.errors import ExitCode, KimiError
from kimi_cli.util import jsonsafe

OVERFLOW = re.compile(
    r"context[ _-]?(length|window|size)|maximum context|too long|too many tokens|exceeds?|exceeding|prompt is too",
    re.IGNORECASE,
)
ERROR_BODY_CAP = 20_000  # of an error answer's body, read for the server's words


class StreamIncomplete(Exception):
    """The stream ended before the model said it was finished."""


class StreamStalled(Exception):
    """The answer had begun streaming (its headers and at least one chunk came), then nothing arrived for
    `request_timeout` seconds. Not retried: asking again would start the whole generation over on a server
    that is already too slow for the timeout (issue 41)."""

    def __init__(self, chunks: int, detail: str) -> None:
        super().__init__(f"no data for the request timeout after {chunks} chunks of the answer ({detail})")
        self.chunks = chunks
        self.detail = detail


class EmptyStream(Exception):
    """HTTP 200 with no chunks at all (llama-cpp-python does this on overflow)."""


class HTTPFailure(Exception):
    """The server answered with an error status (before or inside the stream)."""

    def __init__(self, status: int, message: str, retry_after: str | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.retry_after = retry_after


class ConnectFailure(Exception):
    """No answer at all: kind is dns | refused | timeout | reset | connect."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class ContextOverflow(KimiError):
    """The server says the request does not fit its context window; compaction may help. `window` and
    `asked` are the figures its message gave (kimi_cli/llm/window.py), where it gave them."""

    exit_code = ExitCode.ERROR

    def __init__(self, message: str, window: int | None = None, asked: int | None = None) -> None:
        super().__init__(message)
        self.window = window
        self.asked = asked


@dataclass(frozen=True)
class Failure:
    """A classified failure: retry it, or stop with this exit code."""

    retryable: bool
    summary: str
    kind: str = "other"  # auth | not_found | bad_request | overflow | dns | refused | stalled | transient | other
    retry_after: str | None = None


def connect_failure(exc: BaseException) -> ConnectFailure:
    """Name a connection error by walking its cause chain (httpx and openai wrap the OSError)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    text = ""
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = text or str(current)
        if isinstance(current, socket.gaierror):
            return ConnectFailure("dns", str(current))
        if isinstance(current, ConnectionRefusedError):
            return ConnectFailure("refused", str(current))
        current = current.__cause__ or current.__context__
    lowered = text.lower()
    if "name or service not known" in lowered or "name resolution" in lowered or "nodename nor servname" in lowered:
        return ConnectFailure("dns", text)
    if "connection refused" in lowered or "errno 111" in lowered:
        return ConnectFailure("refused", text)
    return ConnectFailure("connect", text or type(exc).__name__)


def error_message(raw: bytes) -> str:
    """The server's own words from an error body: {"error": {"message"}} or {"message"} or the text."""
    text = raw[:ERROR_BODY_CAP].decode("utf-8", errors="replace").strip()
    try:
        data = jsonsafe.loads(text)
    except ValueError:
        return text or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, str):
            return err
    return text


def classify(exc: BaseException) -> Failure:
    if isinstance(exc, StreamIncomplete):
        return Failure(True, f"stream broke off: {exc}", "transient")
    if isinstance(exc, EmptyStream):
        return Failure(True, str(exc), "empty")
    if isinstance(exc, StreamStalled):
        return Failure(
            False, f"nothing arrived for the request timeout after {exc.chunks} chunks of the answer", "stalled"
        )
    if isinstance(exc, HTTPFailure):
        detail = short(exc.message)
        summary = f"HTTP {exc.status}: {detail}"
        if exc.status in (401, 403):
            return Failure(False, summary, "auth")
        if exc.status == 404:
            return Failure(False, summary, "not_found")
        if exc.status == 429 or exc.status >= 500 or exc.status in (408, 409):
            return Failure(True, summary, "transient", exc.retry_after)
        if exc.status in (400, 413, 422) and OVERFLOW.search(exc.message):
            return Failure(False, summary, "overflow")
        return Failure(False, summary, "bad_request")
    if isinstance(exc, ConnectFailure):
        if exc.kind == "dns":
            return Failure(False, f"cannot resolve the host: {short(exc.detail)}", "dns")
        if exc.kind == "refused":
            return Failure(True, f"connection refused: {short(exc.detail)}", "refused")
        if exc.kind == "timeout":
            return Failure(True, "request timed out", "transient")
        return Failure(True, f"connection failed: {short(exc.detail)}", "transient")
    return Failure(False, f"{type(exc).__name__}: {short(str(exc))}")


def short(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
