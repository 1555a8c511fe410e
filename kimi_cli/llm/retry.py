"""Which provider failures are worth retrying, and how long to wait before the next try."""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass

MAX_RETRY_AFTER = 300.0


class StreamIncomplete(Exception):
    """The stream ended before the model said it was finished."""


@dataclass(frozen=True)
class Failure:
    """A classified provider failure."""

    retryable: bool
    summary: str
    retry_after: float | None = None
    auth: bool = False


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return min(max(when - (now if now is not None else time.time()), 0.0), MAX_RETRY_AFTER)


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Capped exponential backoff with jitter: somewhere in [d/2, d], d = min(cap, base * 2**attempt)."""
    ceiling = min(cap, base * (2**attempt))
    return ceiling * (0.5 + 0.5 * (rng or random).random())


def classify(exc: BaseException) -> Failure:
    """Map an exception from the openai client or the stream to a retry decision."""
    import httpx
    import openai

    if isinstance(exc, StreamIncomplete):
        return Failure(True, f"stream broke off: {exc}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _short(exc.message)
        if status in (401, 403):
            return Failure(False, f"HTTP {status}: {detail}", auth=True)
        if status == 429 or status >= 500 or status in (408, 409):
            after = parse_retry_after(exc.response.headers.get("retry-after")) if exc.response else None
            return Failure(True, f"HTTP {status}: {detail}", retry_after=after)
        return Failure(False, f"HTTP {status}: {detail}")
    if isinstance(exc, openai.APITimeoutError):
        return Failure(True, "request timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return Failure(True, f"connection failed: {_short(str(cause)) or type(cause).__name__}")
    if isinstance(exc, httpx.TransportError):
        return Failure(True, f"stream broke off: {_short(str(exc)) or type(exc).__name__}")
    if isinstance(exc, openai.APIError):
        return Failure(True, f"bad response: {_short(str(exc))}")
    return Failure(False, f"{type(exc).__name__}: {_short(str(exc))}")


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
