"""How long to wait before the next try: Retry-After when the server says, else capped jittered backoff."""

from __future__ import annotations

import email.utils
import random
import time

MAX_RETRY_AFTER = 300.0


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
