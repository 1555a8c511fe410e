"""LoopGuard: notices when the model repeats a call that changes nothing, and stops a run that is stuck.

A call is a repeat only if it has the same key (tool and canonical arguments, from the prepared call) as
the previous call *and* it returned the same result. Anything else in between, or a different result (the file changed,
the test output changed), starts the count again: rereading a file after editing it is normal work.
"""

from __future__ import annotations

import hashlib

REMIND_AT = 3
STOP_AT = 8


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class LoopGuard:
    """Counts consecutive identical (tool, arguments, result) calls."""

    def __init__(self, remind_at: int = REMIND_AT, stop_at: int = STOP_AT) -> None:
        self.remind_at = remind_at
        self.stop_at = stop_at
        self._last: tuple[str, bytes] | None = None
        self.count = 0

    def record(self, key: str, result: str) -> int:
        """Record a finished call by its key; returns how many times in a row it has now had this result."""
        current = (key, _digest(result))
        self.count = self.count + 1 if current == self._last else 1
        self._last = current
        return self.count

    def reminder(self, count: int) -> str | None:
        if count >= self.remind_at:
            return (
                f"\n\n[note: this exact call has now returned the same result {count} times in a row. "
                f"Try a different approach; at {self.stop_at} repeats the run is stopped.]"
            )
        return None

    def should_stop(self, count: int) -> bool:
        return count >= self.stop_at
