"""Inline SVG plots of a session, drawn here (no plotting library, no script): tokens per step split into
uncached input, cached input and output; latency per step (model and tools); cumulative cost with the
compactions marked. Each bar carries its step number (`data-step`), so the page's script can open that step.
"""

from __future__ import annotations

import math
from html import escape

from kimi_cli.session.export.model import SessionExport, Step

WIDTH, HEIGHT = 960, 180
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 14, 30  # the margins around the plot area
SERIES_TOKENS = (("uncached", "input, uncached"), ("cached", "input, cached"), ("output", "output"))
SERIES_LATENCY = (("model", "model"), ("tools", "tools"))


def plots(export: SessionExport) -> str:
    steps = export.steps
    if not steps:
        return '<p class="muted">No steps yet: nothing to plot.</p>'
    return "\n".join(
        (
            _figure("tokens", "Tokens per step", _tokens(steps), SERIES_TOKENS),
            _figure("latency", "Latency per step (seconds)", _latency(steps), SERIES_LATENCY),
            _figure(
                "cost",
                "Cumulative cost (USD)" if export.rates.priced else "Cumulative tokens (no price for this model)",
                _cumulative(steps, export.rates.priced),
                (("line", "so far"), ("compaction", "compaction")),
            ),
        )
    )


def _figure(name: str, title: str, body: str, legend: tuple[tuple[str, str], ...]) -> str:
    keys = "".join(f'<span class="key"><i class="sw s-{k}"></i>{escape(label)}</span>' for k, label in legend)
    return (
        f'<figure class="plot-box"><figcaption>{escape(title)} <span class="legend">{keys}</span></figcaption>'
        f'<svg class="plot" id="plot-{name}" data-plot="{name}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">{body}</svg></figure>'
    )


def _frame(top: float, unit: str, count: int) -> list[str]:
    """Axes, four gridlines labelled with values up to `top`, and step numbers along the bottom."""
    parts: list[str] = []
    inner_h = HEIGHT - TOP - BOTTOM
    for i in range(5):
        y = TOP + inner_h * (1 - i / 4)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(top * i / 4, unit)}</text>'
        )
    every = max(1, round(count / 12))
    for index in range(0, count, every):
        x = _x(index, count) + _bar_w(count) / 2
        parts.append(f'<text class="tick" x="{x:.1f}" y="{HEIGHT - 10}" text-anchor="middle">{index + 1}</text>')
    return parts


def _x(index: int, count: int) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * index / count


def _bar_w(count: int) -> float:
    return max(1.0, (WIDTH - LEFT - RIGHT) / count * 0.8)


def _y(value: float, top: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - (value / top if top else 0))


def _stacked(steps: list[Step], series: list[tuple[str, list[float]]], unit: str) -> str:
    count = len(steps)
    totals = [sum(values[i] for _, values in series) for i in range(count)]
    top = _nice(max(totals) if totals else 0)
    parts = _frame(top, unit, count)
    width = _bar_w(count)
    for index, step in enumerate(steps):
        base = 0.0
        x = _x(index, count)
        tip = ", ".join(f"{name} {_fmt(values[index], unit)}" for name, values in series)
        parts.append(f'<g class="bar" data-step="{step.number}"><title>step {step.number}: {escape(tip)}</title>')
        for name, values in series:
            value = values[index]
            if value <= 0:
                continue
            y1, y0 = _y(base + value, top), _y(base, top)
            parts.append(
                f'<rect class="s-{name}" x="{x:.1f}" y="{y1:.1f}" width="{width:.1f}" '
                f'height="{max(y0 - y1, 0.5):.1f}"/>'
            )
            base += value
        parts.append("</g>")
    return "".join(parts)


def _tokens(steps: list[Step]) -> str:
    return _stacked(
        steps,
        [
            ("uncached", [float(s.usage.uncached) for s in steps]),
            ("cached", [float(s.usage.cached) for s in steps]),
            ("output", [float(s.usage.output) for s in steps]),
        ],
        "tok",
    )


def _latency(steps: list[Step]) -> str:
    return _stacked(
        steps, [("model", [s.model_ms / 1000 for s in steps]), ("tools", [s.tools_ms / 1000 for s in steps])], "s"
    )


def _cumulative(steps: list[Step], priced: bool) -> str:
    count = len(steps)
    running, values = 0.0, []
    for step in steps:
        running += step.cost_usd if priced else step.usage.total + step.subagent_usage.total
        values.append(running)
    unit = "usd" if priced else "tok"
    top = _nice(values[-1] if values else 0)
    parts = _frame(top, unit, count)
    half = _bar_w(count) / 2
    points = " ".join(f"{_x(i, count) + half:.1f},{_y(v, top):.1f}" for i, v in enumerate(values))
    for index, step in enumerate(steps):
        if step.compaction is not None:
            x = _x(index, count) + half
            parts.append(
                f'<g class="mark" data-step="{step.number}"><title>compaction before step {step.number}: '
                f"{step.compaction.tokens_before:,} tokens</title>"
                f'<line class="s-compaction" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{HEIGHT - BOTTOM}"/></g>'
            )
    parts.append(f'<polyline class="s-line" points="{points}"/>')
    for index, step in enumerate(steps):
        x, y = _x(index, count) + half, _y(values[index], top)
        parts.append(
            f'<circle class="dot" data-step="{step.number}" cx="{x:.1f}" cy="{y:.1f}" r="2.5">'
            f"<title>step {step.number}: {_fmt(values[index], unit)}</title></circle>"
        )
    return "".join(parts)


def _nice(value: float) -> float:
    """A round top for an axis: 1, 2 or 5 times a power of ten, at or above `value`."""
    if value <= 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(value))
    for factor in (1, 2, 5):
        if magnitude * factor >= value:
            return magnitude * factor
    return magnitude * 10


def _fmt(value: float, unit: str) -> str:
    if unit == "usd":
        return f"${value:.4f}" if value < 1 else f"${value:.2f}"
    if unit == "s":
        return f"{value:.2f} s" if value < 10 else f"{value:.0f} s"
    if value >= 1_000_000:
        return f"{value / 1e6:.1f}M"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.0f}"
