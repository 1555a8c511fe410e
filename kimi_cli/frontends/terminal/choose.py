"""An arrow-key picker: a list shown above the question, ↑/↓ moves, Enter takes the marked one, Esc cancels,
typing filters (every word typed must appear in the line, case-insensitive).

The state and its drawing only; the keys are bound where the question is asked: the session's input line
(kimi_cli.frontends.terminal.input, for /resume and /model) and a one-off prompt before the session starts
(`kimi -r`, kimi_cli.frontends.terminal.picker). Labels are the caller's text and are made safe to show here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kimi_cli.util.sanitize import visible

ROWS = 10  # lines of the list shown at once; the window follows the mark
HINT = "↑↓ move · enter picks · esc cancels · type to filter"


@dataclass
class Choices:
    labels: list[str]
    selected: int = 0  # the mark's place among the lines the filter keeps
    rows: int = ROWS
    _filter: str | None = field(default=None, repr=False)  # the filter `selected` was set under

    def kept(self, text: str) -> list[int]:
        """The indexes of the labels the typed text keeps; a changed filter puts the mark on the first again."""
        words = text.lower().split()
        if text != self._filter:
            if self._filter is not None:
                self.selected = 0
            self._filter = text
        kept = [i for i, label in enumerate(self.labels) if all(w in label.lower() for w in words)]
        self.selected = min(self.selected, max(len(kept) - 1, 0))
        return kept

    def move(self, delta: int, text: str) -> None:
        kept = self.kept(text)
        if kept:
            self.selected = (self.selected + delta) % len(kept)

    def picked(self, text: str) -> int | None:
        """The index (into labels) of the marked line, or None when the filter keeps none."""
        kept = self.kept(text)
        return kept[self.selected] if kept else None

    def fragments(self, text: str, width: int) -> list[tuple[str, str]]:
        """The list as prompt_toolkit fragments, one line per label fitted to `width`, the mark in reverse,
        then the hint; lines above or below the window are counted."""
        kept = self.kept(text)
        start = min(max(self.selected - self.rows // 2, 0), max(len(kept) - self.rows, 0))
        shown = kept[start : start + self.rows]
        out: list[tuple[str, str]] = []
        if start:
            out.append(("class:hint", f"  ↑ {start} more\n"))
        for place, index in enumerate(shown, start=start):
            mark = place == self.selected
            line = _fit(("❯ " if mark else "  ") + visible(self.labels[index], one_line=True), width)
            out.append(("reverse" if mark else "", line))
            out.append(("", "\n"))
        below = len(kept) - start - len(shown)
        if below:
            out.append(("class:hint", f"  ↓ {below} more\n"))
        if not kept:
            out.append(("class:hint", _fit(f"  nothing matches {text!r}", width) + "\n"))
        out.append(("class:hint", _fit("  " + HINT, width) + "\n"))
        return out


def _fit(text: str, width: int) -> str:
    """`text` cut to the terminal's cells (a wide letter takes two), with … where it was cut."""
    from prompt_toolkit.utils import get_cwidth

    room = max(width - 1, 10)
    if get_cwidth(text) <= room:
        return text
    used, out = 0, []
    for char in text:
        used += get_cwidth(char)
        if used > room - 1:
            break
        out.append(char)
    return "".join(out) + "…"
