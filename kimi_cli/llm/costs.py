"""What a run cost: input split into prompt-cache hits, writes and misses, each at its own rate from the model table.

One place computes it for `/cost`, the status line, the headless JSON result and the ci-repair report.
K3.1 Pro bills a cache hit at a tenth of a miss, and kimi's stable prefix exists to be a cache hit, so a
cost with one input price would be wrong by up to 10x. Writes to the prompt cache are priced apart (5-minute
and 1-hour writes, models.toml); they are counted where the server's usage reports them (`cache_write_tokens`,
kimi_cli/llm/assemble.py), and are otherwise among the misses, which is their price for a 5-minute write on
every K3-family model.
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
    cache_write: float = 0.0  # a 5-minute write; 0: billed as a miss
    cache_write_1h: float = 0.0

    @property
    def priced(self) -> bool:
        return any((self.input, self.cached_input, self.output))

    @property
    def write(self) -> float:
        """What one written token costs (per 1M): the write price, or a miss's where none is set apart."""
        return self.cache_write or self.input

    def line(self) -> str:
        """The rates in one line, for `/cost`."""
        writes = f" / ${self.cache_write:g} write (5 min)" if self.cache_write else ""
        writes += f" / ${self.cache_write_1h:g} write (1 h)" if self.cache_write_1h else ""
        return f"${self.input:g} miss / ${self.cached_input:g} hit{writes} / ${self.output:g} output per 1M tokens"


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
    return Rates(
        values["input"], values["cached_input"], values["output"], source, info.price_cache_write,
        info.price_cache_write_1h,
    )  # fmt: skip


@dataclass(frozen=True)
class Cost:
    """Tokens by kind and dollars by kind, for a usage dict (prompt_tokens, cached_tokens, completion_tokens)."""

    uncached_tokens: int  # misses, the cache writes among them
    cached_tokens: int
    output_tokens: int
    rates: Rates
    written_tokens: int = 0  # of the misses, those the server says it wrote to the prompt cache (5 minutes)

    @property
    def uncached_usd(self) -> float:
        """Misses at the miss rate; the written ones at the write rate."""
        written = min(self.written_tokens, self.uncached_tokens)
        return ((self.uncached_tokens - written) * self.rates.input + written * self.rates.write) / 1e6

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
            "input_cache_write_tokens": self.written_tokens,
            "input_cached_usd": round(self.cached_usd, 6),
            "output_usd": round(self.output_usd, 6),
            "total_usd": round(self.total_usd, 6),
            "rates_per_million": {
                "input": self.rates.input,
                "cached_input": self.rates.cached_input,
                "output": self.rates.output,
                "cache_write": self.rates.cache_write,
                "cache_write_1h": self.rates.cache_write_1h,
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
        writes = f", {self.written_tokens:,} of them cache writes" if self.written_tokens else ""
        return (
            f"input {self.uncached_tokens + self.cached_tokens:,} = {self.cached_tokens:,} cache hits + "
            f"{self.uncached_tokens:,} misses{writes} ({100 * self.hit_ratio:.0f}% hit) · output "
            f"{self.output_tokens:,} · {money}"
        )


def cost_of(usage: Mapping[str, int], rates: Rates) -> Cost:
    prompt = int(usage.get("prompt_tokens", 0) or 0)
    cached = min(int(usage.get("cached_tokens", 0) or 0), prompt)
    written = min(int(usage.get("cache_write_tokens", 0) or 0), prompt - cached)
    return Cost(prompt - cached, cached, int(usage.get("completion_tokens", 0) or 0), rates, written)


def first_request_line(first: Any) -> str:
    """Whether the session's first request hit the prompt cache (a new session over the same pack should)."""
    if first is None:
        return "first request: none sent yet"
    prompt, cached = int(getattr(first, "prompt_tokens", 0)), int(getattr(first, "cached_tokens", 0))
    if not prompt:
        return "first request: the server reported no usage"
    verdict = "hit the prompt cache" if cached else "missed the prompt cache"
    return f"first request {verdict}: {cached:,} of {prompt:,} input tokens cached"
