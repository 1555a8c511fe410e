"""`kimi engine bench`: time to first token, decode speed and prefix-cache reuse against any OpenAI-compatible URL."""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass
from typing import Any

FILLER = ("The quick brown fox studies distributed systems, reads the vLLM scheduler code, and writes notes "
          "about prefix caching, pipeline parallelism and expert routing. ")  # fmt: skip


def parse_size(text: str) -> int:
    text = text.strip().lower()
    mult = 1_000 if text.endswith("k") else 1_000_000 if text.endswith("m") else 1
    return int(float(text.rstrip("km")) * mult)


def prompt_of(tokens: int, salt: str) -> str:
    """About `tokens` tokens of text (o200k counts ~28 tokens per filler sentence), unique per salt."""
    repeats = max(1, tokens // 28)
    return f"[{salt}] " + FILLER * repeats + "\nReply with one short sentence."


@dataclass
class Sample:
    ttft: float
    decode_tps: float
    completion_tokens: int
    prompt_tokens: int
    cached_tokens: int


async def one_request(client: Any, model: str, prompt: str, max_tokens: int) -> Sample:
    started = time.perf_counter()
    first: float | None = None
    usage: Any = None
    pieces = 0
    stream = await client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        stream=True,
        max_tokens=max_tokens,
        stream_options={"include_usage": True},
    )
    async with stream:
        async for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices or []:
                delta = choice.delta
                extra = (delta.model_extra or {}) if delta is not None else {}
                if delta is not None and (delta.content or extra.get("reasoning_content") or extra.get("reasoning")):
                    pieces += 1
                    if first is None:
                        first = time.perf_counter()
                if (choice.model_extra or {}).get("usage"):
                    usage = choice.model_extra["usage"]
    end = time.perf_counter()
    first = first or end
    data = usage if isinstance(usage, dict) else (usage.model_dump() if usage is not None else {})
    completion = int(data.get("completion_tokens") or pieces)
    details = data.get("prompt_tokens_details") or {}
    cached = int(data.get("cached_tokens") or (details.get("cached_tokens") if isinstance(details, dict) else 0) or 0)
    decode_time = end - first
    return Sample(
        first - started,
        (completion - 1) / decode_time if decode_time > 0 and completion > 1 else 0.0,
        completion,
        int(data.get("prompt_tokens") or 0),
        cached,
    )


async def run_bench(
    url: str,
    model: str,
    contexts: list[int],
    concurrencies: list[int],
    requests: int = 4,
    max_tokens: int = 128,
    api_key: str = "EMPTY",
) -> list[dict[str, Any]]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key=api_key, max_retries=0, timeout=600)
    rows: list[dict[str, Any]] = []
    for context in contexts:
        for concurrency in concurrencies:
            samples: list[Sample] = []
            for batch in range(max(1, requests // concurrency)):
                # Same prefix within a row: the second and later batches can reuse the first one's cache.
                prompts = [prompt_of(context, f"ctx{context}-c{concurrency}-{i}") for i in range(concurrency)]
                samples += await asyncio.gather(*(one_request(client, model, p, max_tokens) for p in prompts))
                del batch
            prompt_total = sum(s.prompt_tokens for s in samples)
            hit_rate = sum(s.cached_tokens for s in samples) / prompt_total if prompt_total else None
            rows.append({
                "context": context, "concurrency": concurrency, "requests": len(samples),
                "ttft_s": statistics.median(s.ttft for s in samples),
                "decode_tokens_per_s": statistics.median(s.decode_tps for s in samples),
                "prefix_cache_hit_rate": hit_rate,
            })  # fmt: skip
    await client.close()
    return rows
