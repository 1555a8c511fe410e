"""What a run cost: input split into prompt-cache hits and misses, each at its own rate from the model table.

One place computes it for `/cost`, the status line, the headless JSON result and the ci-repair report.
K3.1 Pro bills a cache hit at a tenth of a miss, and kimi's stable prefix exists to be a cache hit, so a
cost with one input price would be wrong by up to 10x.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kimi_cli.llm.models import ModelInfo


class PricingOverride(Protocol):
    input: float | None
    cached_input: float | None
    output: float | None


@dataclass(frozen=True)
class Rates:
    """USD per 1M tokens, and where they come from."""

    input: float
    cached_input: float
    output: float
    source: str

    @property
    def priced(self) -> bool:
        return any((self.input, self.cached_input, self.output))


def rates_for(info: ModelInfo, override: PricingOverride | None = None) -> Rates:
    """The model table's prices; a `[pricing]` value set in the config wins over the table's."""
    values = {"input": info.price_input, "cached_input": info.price_cached_input, "output": info.price_output}
    changed = []
    for key in values:
        value = getattr(override, key, None) if override is not None else None
        if value is not None:
            values[key] = float(value)
            changed.append(key)
    source = f"{info.id}: {info.price_source}"
    if changed:
        source = f"[pricing] in your config ({', '.join(changed)}); otherwise {source}"
    return Rates(values["input"], values["cached_input"], values["output"], source)


@dataclass(frozen=True)
class Cost:
    """Tokens by kind and dollars by kind, for a usage dict (prompt_tokens, cached_tokens, completion_tokens)."""

    uncached_tokens: int
    cached_tokens: int
    output_tokens: int
    rates: Rates

    @property
    def uncached_usd(self) -> float:
        return self.uncached_tokens * self.rates.input / 1e6

    @property
    def cached_usd(self) -> float:
        return self.cached_tokens * self.rates.cached_input / 1e6

    @property
    def output_usd(self) -> float:
        return self.output_tokens * self.rates.output / 1e6

    @property
    def total_usd(self) -> float:
        return self.uncached_usd + self.cached_usd + self.output_usd

    @property
    def hit_ratio(self) -> float:
        total = self.uncached_tokens + self.cached_tokens
        return self.cached_tokens / total if total else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The shape of `cost` in the JSON result and the ci-repair results file."""
        return {
            "input_uncached_tokens": self.uncached_tokens,
            "input_cached_tokens": self.cached_tokens,
            "output_tokens": self.output_tokens,
            "input_uncached_usd": round(self.uncached_usd, 6),
            "input_cached_usd": round(self.cached_usd, 6),
            "output_usd": round(self.output_usd, 6),
            "total_usd": round(self.total_usd, 6),
            "rates_per_million": {
                "input": self.rates.input,
                "cached_input": self.rates.cached_input,
                "output": self.rates.output,
            },
            "rates_source": self.rates.source,
        }

    def summary(self) -> str:
        """One line: cache hits and misses, output, and dollars."""
        if not self.rates.priced:
            money = "cost n/a (no price for this model; set [pricing] in the config)"
        else:
            money = (
                f"${self.total_usd:.4f} (misses ${self.uncached_usd:.4f} + hits ${self.cached_usd:.4f} + "
                f"output ${self.output_usd:.4f})"
            )
        return (
            f"input {self.uncached_tokens + self.cached_tokens:,} = {self.cached_tokens:,} cache hits + "
            f"{self.uncached_tokens:,} misses ({100 * self.hit_ratio:.0f}% hit) · output {self.output_tokens:,} · "
            f"{money}"
        )


def cost_of(usage: Mapping[str, int], rates: Rates) -> Cost:
    prompt = int(usage.get("prompt_tokens", 0) or 0)
    cached = min(int(usage.get("cached_tokens", 0) or 0), prompt)
    return Cost(prompt - cached, cached, int(usage.get("completion_tokens", 0) or 0), rates)


def first_request_line(first: Any) -> str:
    """Whether the session's first request hit the prompt cache (a new session over the same pack should)."""
    if first is None:
        return "first request: none sent yet"
    prompt, cached = int(getattr(first, "prompt_tokens", 0)), int(getattr(first, "cached_tokens", 0))
    if not prompt:
        return "first request: the server reported no usage"
    verdict = "hit the prompt cache" if cached else "missed the prompt cache"
    return f"first request {verdict}: {cached:,} of {prompt:,} input tokens cached"
