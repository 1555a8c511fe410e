"""Keep tool output within budget: the head and the tail survive, and the cut is stated."""

from __future__ import annotations


def cap_text(text: str, limit: int) -> str:
    """Return text unchanged when short; else head + a note of how much was cut + tail."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return (
        f"{text[:head]}\n\n[... {cut} characters cut; showing the first {head} and last {tail} ...]\n\n{text[-tail:]}"
    )
