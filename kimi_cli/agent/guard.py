"""LoopGuard: notices when the model repeats the same call, and stops a run that is stuck."""

from __future__ import annotations

import json
from collections import Counter

REMIND_AT = 3
STOP_AT = 6


def call_key(name: str, arguments: str) -> str:
    try:
        canonical = json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except (json.JSONDecodeError, TypeError):
        canonical = arguments.strip()
    return f"{name}\x00{canonical}"


class LoopGuard:
    """Counts identical (tool, arguments) calls within a run."""

    def __init__(self, remind_at: int = REMIND_AT, stop_at: int = STOP_AT) -> None:
        self.remind_at = remind_at
        self.stop_at = stop_at
        self.counts: Counter[str] = Counter()

    def record(self, name: str, arguments: str) -> int:
        key = call_key(name, arguments)
        self.counts[key] += 1
        return self.counts[key]

    def reminder(self, count: int) -> str | None:
        if count >= self.remind_at:
            return (
                f"\n\n[note: this exact call has now been made {count} times and its result will not change. "
                f"Try a different approach; at {self.stop_at} repeats the run is stopped.]"
            )
        return None
