"""Fitting the session's requests to the window: the pack's room, the summary request, the compacted history.

The rules (issue 41): every request leaves the model its smallest useful answer (the model table's
`min_answer`); the pack never takes more than the window leaves after the system prompt, the tools, the task
and that answer (a larger budget is clamped, with a notice); the summary request fits the window with its own
answer; and a compacted history is never larger than the request it replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kimi_cli.context.compaction import SUMMARY_SYSTEM, TRANSCRIPT_CAP, summary_request
from kimi_cli.context.request_size import PER_MESSAGE, RequestMeter
from kimi_cli.errors import KimiError
from kimi_cli.llm.types import Message

# kimi's built-in tools block before the tools are known (the pack is made before them): 13 tools, 2,644
# o200k tokens measured 2026-12 (a `kimi -p` request's "tools"), rounded up for the MCP tools some add.
TOOLS_RESERVE = 3_000
CHARS_PER_TOKEN_GUESS = 3.0  # a first cut of the transcript, measured after (code runs 3-4 chars a token)
MIN_PACK = 200  # a pack smaller than this holds nothing useful: none is made


class WindowTooSmall(KimiError):
    """The system prompt and the tools alone leave no room for an answer in this window."""


def pack_room(
    meter: RequestMeter, window: int, compact_at: float, base: str, task: str, tools_tokens: int | None
) -> int:
    """Tokens (the server's) the pack may take: the compaction threshold, less the system prompt without a
    pack, the tools, the task and the smallest answer."""
    fixed = meter.text(base) + meter.text(task) + 2 * PER_MESSAGE
    if tools_tokens is None:
        fixed += round(TOOLS_RESERVE * meter.scale)
    else:  # the tools as counted, and what the server's template made of the blocks (SmolLM2's drops the tools)
        fixed = max(meter.text(base), fixed + tools_tokens + meter.template)
    limit = int(window * compact_at) - meter.info.answer_room(window)
    return limit - meter.with_margin(fixed)


def o200k_budget(meter: RequestMeter, tokens: int) -> int:
    """The packer's budget (o200k tokens, the learned factor applied) for `tokens` of the server's."""
    if tokens <= 0:
        return 0
    margin = 0.0 if meter.exact else meter.info.token_margin
    learned = meter.counter.factor if meter.counter is not None else 1.0
    return int(tokens / (meter.scale / learned) / (1 + margin))


def summary_budget(meter: RequestMeter, window: int) -> int:
    """The summary's own answer budget: a quarter of the window, at least the smallest answer, within the
    model's cap."""
    return min(meter.info.max_output, max(meter.info.answer_room(window), window // 4))


def fitted_summary_request(meter: RequestMeter, messages: list[Message], window: int, answer: int) -> list[Message]:
    """The summary request cut to what the window leaves after its answer (head a quarter, tail the rest,
    as compaction.transcript cuts): measured, cut again by the ratio it is over, at most four times."""
    limit = window - answer
    cap = min(TRANSCRIPT_CAP, max(2000, int((limit - meter.text(SUMMARY_SYSTEM)) * CHARS_PER_TOKEN_GUESS)))
    request = summary_request(messages, cap)
    for _ in range(4):
        size = meter.request(request)
        if size <= limit:
            return request
        cap = max(500, int(cap * limit / size * 0.9))
        request = summary_request(messages, cap)
    return request


def shrink_to(
    target: int,
    measure: Callable[[list[Message]], int],
    build: Callable[[int | None, str | None], list[Message]],
    pack_budget: int,
    summary: str | None,
) -> list[Message]:
    """The compacted history at most `target` tokens: as built, then with a pack cut by what is over, then
    a shorter summary, then no pack at all. Returns the smallest tried when none fits."""
    best: tuple[int, list[Message]] | None = None
    budget: int | None = None
    text = summary
    for attempt in range(4):
        history = build(budget, text)
        size = measure(history)
        if best is None or size < best[0]:
            best = (size, history)
        if size <= target:
            return history
        over = size / max(1, target)
        if attempt == 0 or (attempt == 1 and not text):
            budget = int((budget if budget is not None else pack_budget) / over * 0.9)
        elif text and attempt <= 2:
            text = text[: max(200, int(len(text) / over * 0.8))]
        else:
            budget = 0
    assert best is not None
    return best[1]


def too_small(window: int, size: int, answer: int) -> WindowTooSmall:
    return WindowTooSmall(
        f"the model's window ({window:,} tokens) cannot hold kimi's system prompt and tools ({size:,} tokens) "
        f"with room for an answer ({answer:,}): use a server or model with a larger window (llama-server -c, "
        "vLLM --max-model-len, --context-length)"
    )


def has_turns(messages: list[dict[str, Any]]) -> bool:
    """Whether the history holds anything to summarise (an answer of the model's)."""
    return any(m.get("role") == "assistant" for m in messages)
