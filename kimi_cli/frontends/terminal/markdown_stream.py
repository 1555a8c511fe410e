"""Stream markdown in linear time: finished blocks are rendered once and printed; only the tail is pending."""

from __future__ import annotations

from collections.abc import Callable


class MarkdownStream:
    """Splits streamed text into complete blocks (paragraphs, or whole fenced code blocks).

    Each block is handed to `emit` exactly once, so rendering work grows with the answer's length,
    not with its square (re-rendering the whole answer on every delta would).
    """

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit = emit
        self.pending = ""
        self.in_fence = False
        self.line_start = 0  # the first line of `pending` not yet looked at

    def feed(self, delta: str) -> None:
        self.pending += delta
        while (cut := self._next_boundary()) is not None:
            block, self.pending = self.pending[:cut], self.pending[cut:]
            self.line_start = 0
            if block.strip():
                self.emit(block)

    def _next_boundary(self) -> int | None:
        """End of the next complete block in `pending`, or None. Each line is examined once."""
        while (newline := self.pending.find("\n", self.line_start)) >= 0:
            line = self.pending[self.line_start : newline].strip()
            first_line = self.line_start == 0
            self.line_start = newline + 1
            if line.startswith(("```", "~~~")):
                self.in_fence = not self.in_fence
                if not self.in_fence:
                    return newline + 1
            elif not self.in_fence and not line and not first_line:
                return newline + 1
        return None

    def close(self) -> None:
        if self.pending.strip():
            self.emit(self.pending)
        self.pending = ""
        self.in_fence = False
        self.line_start = 0
