"""The picker's state and drawing (kimi_cli.frontends.terminal.choose), in process: filter, mark, window, width."""

from __future__ import annotations

from kimi_cli.frontends.terminal.choose import Choices


def text(choices: Choices, typed: str, width: int) -> list[str]:
    return "".join(t for _, t in choices.fragments(typed, width)).splitlines()


def test_moving_wraps_and_a_new_filter_marks_the_first_it_keeps() -> None:
    c = Choices(["alpha one", "beta two", "gamma three"])
    c.move(-1, "")
    assert c.picked("") == 2  # up from the first: the last
    c.move(1, "")
    assert c.picked("") == 0
    assert c.picked("TWO beta") == 1  # every word, any case, any order
    c.move(1, "t")  # "beta two", "gamma three" kept
    assert c.picked("t") == 2
    assert c.picked("nothing like it") is None


def test_the_window_follows_the_mark_and_counts_the_rest() -> None:
    c = Choices([f"session {n}" for n in range(30)], rows=10)
    for _ in range(15):
        c.move(1, "")
    lines = text(c, "", 60)
    assert lines[0] == "  ↑ 10 more" and "  ↓ 10 more" in lines
    assert "❯ session 15" in lines


def test_lines_fit_the_width_by_cells_and_labels_are_made_safe() -> None:
    c = Choices(["x" * 200, "会話" * 50, "evil\x1b[2Jtitle"])
    for width in (60, 120):
        lines = text(c, "", width)
        from prompt_toolkit.utils import get_cwidth

        assert all(get_cwidth(line) < width for line in lines), lines
    assert "\x1b" not in "".join(text(c, "", 120))
