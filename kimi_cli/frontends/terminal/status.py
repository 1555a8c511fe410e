"""The status line under the prompt: what the session costs and what the running turn is doing.

Built from segments with priorities, so a narrow terminal drops whole segments (never half a word):
at 60 columns a running turn still shows its elapsed time, tokens, cost and how to interrupt it.
Prices come from the model table (kimi_cli/llm/models.toml via kimi_cli.llm.costs); a model without
a price says so instead of showing $0.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kimi_cli.frontends.figures import short_tokens
from kimi_cli.llm.costs import Rates, cost_of

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
NO_RATES = Rates(0.0, 0.0, 0.0, "")


def money(usd: float) -> str:
    return f"${usd:.3f}" if usd < 10 else f"${usd:.2f}"


def short_phase(phase: str) -> str:
    """`running Shell` -> `Shell`; `thinking (1,234 chars)` -> `thinking`; for narrow terminals."""
    phase = phase.split(" (", 1)[0]
    return {"waiting for your answer": "waiting"}.get(phase, phase.removeprefix("running "))


def elapsed(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else f"{seconds // 3600}h{seconds % 3600 // 60:02d}"


@dataclass
class SessionStatus:
    """What the status line shows. Token totals cover the whole session (carried over on resume)."""

    model: str
    provider: str
    window: int
    sandbox: str
    rates: Rates = NO_RATES
    context_tokens: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    running_tasks: Callable[[], int] = lambda: 0  # background commands still running
    effort: str = ""  # "effort high", or "" for a model that takes no reasoning control
    mode: str = ""  # an approval or planning mode label, shown when set (features may set it)
    pack_tokens: int = 0  # what the first request will carry, shown until the first answer
    # The running turn: None when idle.
    turn_started: float | None = None
    phase: str = ""
    turn_prompt: int = 0
    turn_output: int = 0
    hint: str = ""  # a transient hint (Ctrl-C again to exit), replaces the idle line while set
    hint_until: float = 0.0
    extra: list[Callable[[], str]] = field(default_factory=list)  # more segments (features), idle and busy
    _short: dict[int, str] = field(default_factory=dict)  # shorter forms of segments, by index (line())

    # --- counting ----------------------------------------------------------------------------------------

    def add(self, usage: dict[str, int]) -> None:
        prompt, output = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
        self.context_tokens = prompt + output
        self.prompt_tokens += prompt
        self.cached_tokens += int(usage.get("cached_tokens", 0))
        self.completion_tokens += output
        self.turn_prompt += prompt
        self.turn_output += output

    def carry(self, usage: dict[str, int]) -> None:
        """Totals of earlier runs of this session (resume): the cost goes on from there."""
        self.prompt_tokens = int(usage.get("prompt_tokens", 0))
        self.cached_tokens = int(usage.get("cached_tokens", 0))
        self.completion_tokens = int(usage.get("completion_tokens", 0))
        self.context_tokens = int(usage.get("last_context", 0))

    @property
    def priced(self) -> bool:
        return self.rates.priced

    @property
    def cost(self) -> float:
        usage = {"prompt_tokens": self.prompt_tokens, "cached_tokens": self.cached_tokens,
                 "completion_tokens": self.completion_tokens}  # fmt: skip
        return cost_of(usage, self.rates).total_usd

    def cost_text(self) -> str:
        return money(self.cost) if self.priced else "no price"

    # --- the turn ----------------------------------------------------------------------------------------

    def begin_turn(self) -> None:
        self.turn_started = time.monotonic()
        self.phase = "thinking"
        self.turn_prompt = self.turn_output = 0

    def end_turn(self) -> None:
        self.turn_started = None
        self.phase = ""

    def flash(self, hint: str, seconds: float = 2.5) -> None:
        self.hint, self.hint_until = hint, time.monotonic() + seconds

    # --- the line ----------------------------------------------------------------------------------------

    def segments(self) -> list[tuple[int, str]]:
        """(priority, text): lower numbers stay longest when the terminal is narrow."""
        now = time.monotonic()
        if self.turn_started is not None:
            frame = SPINNER[int(now * 10) % len(SPINNER)]
            spent = now - self.turn_started
            out = [(0, f"{frame} {self.phase} {elapsed(spent)}")]
            self._short = {0: f"{frame} {short_phase(self.phase)} {elapsed(spent)}"}
            out.append((1, f"↑{short_tokens(self.turn_prompt)} ↓{short_tokens(self.turn_output)}"))
            out.append((2, self.cost_text()))
            out.append((0, "esc to interrupt"))
            tasks = self.running_tasks()
            if tasks:
                out.append((5, f"{tasks} task{'s' if tasks != 1 else ''} running"))
            if self.mode:
                out.append((3, self.mode))
            out += [(4, text) for text in (f() for f in self.extra) if text]  # /goal's progress, for one
            return out
        if self.hint and now < self.hint_until:
            return [(0, self.hint)]
        model = f"{self.model} ({self.effort})" if self.effort else self.model
        out = [(2, model)]
        if self.mode:
            out.append((1, self.mode))
        if self.pack_tokens and not self.prompt_tokens:  # what the first request will carry, and cost
            pack = f"pack {short_tokens(self.pack_tokens)} tokens"
            if self.priced:
                miss = self.pack_tokens * self.rates.input / 1e6
                hit = self.pack_tokens * self.rates.cached_input / 1e6
                out.append((0, f"{pack} ≈{money(miss)} ({money(hit)} cached)"))
            else:
                out += [(0, pack), (1, "no price for this model")]
        else:
            pct = 100 * self.context_tokens / self.window if self.window else 0.0
            out.append((0, f"ctx {short_tokens(self.context_tokens)}/{short_tokens(self.window)} ({pct:.0f}%)"))
            if self.prompt_tokens:
                out.append((4, f"cached {100 * self.cached_tokens / self.prompt_tokens:.0f}%"))
            out.append((1, self.cost_text()))
        out.append((5, f"sandbox {self.sandbox}"))
        tasks = self.running_tasks()
        if tasks:
            out.append((3, f"{tasks} task{'s' if tasks != 1 else ''} running"))
        out += [(6, text) for text in (f() for f in self.extra) if text]
        return out

    def line(self, width: int = 200) -> str:
        """The segments that fit in `width` columns, in their order, joined by ` · `: first as they are,
        then with their short forms (`Shell` for `running Shell`), then without the least important ones."""
        self._short = {}
        segments = self.segments()
        full = " · ".join(text for _, text in segments)
        if len(full) <= width:
            return full
        segments = [(p, self._short.get(i, text)) for i, (p, text) in enumerate(segments)]
        kept = list(range(len(segments)))
        while kept:
            text = " · ".join(segments[i][1] for i in kept)
            if len(text) <= width:
                return text
            worst = max(kept, key=lambda i: (segments[i][0], i))
            kept.remove(worst)
        return ""
