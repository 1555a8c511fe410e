"""Numbers as the front ends write them for people: a token count, short enough for a status line or a
table cell. The terminal's status line and recap and the session list (the terminal's picker, `kimi export`)
share it, so it sits beside them rather than in the terminal."""

from __future__ import annotations


def short_tokens(n: int) -> str:
    """12,345 -> 12.3k; 1,234,567 -> 1.23M: status-line sized."""
    if n < 1000:
        return str(n)
    if n < 100_000:
        return f"{n / 1000:.1f}k"
    if n < 1_000_000:
        return f"{n // 1000}k"
    return f"{n / 1e6:.2f}M"
