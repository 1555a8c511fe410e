"""The window's arithmetic: how much an answer may take, and what a server's "too long" says about its window.

Every request carries an answer budget (the model table's `answer_field`: `max_completion_tokens` for the
K3 family, `max_tokens` elsewhere): what the window leaves after the prompt and a margin, within the table's
`max_output` and the configured `max_output_tokens`. A budget under the table's `min_answer` is not sent:
the caller compacts first (kimi_cli/context/session_context.py), since a reasoning model given a few hundred
tokens can spend them all thinking and answer 200 with no content.

When a server refuses a request as too long, its message names the window more often than not; kimi takes
the figure (learns the window) and shrinks once, never in a loop (kimi_cli/agent/loop.py).
"""

from __future__ import annotations

import re

from kimi_cli.llm.models import ModelInfo

# Counted by the server's own tokenizer, what is left unknown is the chat template's own tokens (role
# markers, the tools rendered its way): measured on llama-server (SmolLM2, --jinja) at 2-7% of the request,
# so 8% of it plus a fixed 32. Counted by kimi's o200k estimate, the model table's `token_margin` applies.
SERVER_MARGIN = 0.08
SERVER_MARGIN_MIN = 32

# Servers' own words for "the request is larger than my window", with the window (and the size asked for
# where they say it). One pattern per server family; the first that matches wins.
_WINDOW_PATTERNS = (
    # llama-server: "request (6031 tokens) exceeds the available context size (4096 tokens), try increasing it"
    re.compile(r"request \((?P<asked>\d+) tokens\) exceeds the available context size \((?P<window>\d+) tokens\)"),
    # vLLM: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (...)" and
    # "... maximum context length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500)"
    re.compile(r"maximum context length is (?P<window>\d+) tokens?\D+?(?:requested|has|resulted in) (?P<asked>\d+)"),
    re.compile(r"maximum context length is (?P<window>\d+)"),
    # vLLM: "The decoder prompt (length 5000) is longer than the maximum model length of 4096"
    re.compile(r"prompt \(length (?P<asked>\d+)\) is longer than the maximum model length of (?P<window>\d+)"),
    # Moonshot: "Invalid request: Your request exceeded model token limit: 262144 (requested: 269030)"
    re.compile(r"exceeded model token limit: (?P<window>\d+)(?: \(requested: (?P<asked>\d+)\))?"),
    # moonshot-v1: "model max length exceeded, max length:8192"
    re.compile(r"max length exceeded, max length: ?(?P<window>\d+)"),
)


def window_in(message: str) -> tuple[int | None, int | None]:
    """(the window, the tokens the request asked for) as the server's error message states them."""
    for pattern in _WINDOW_PATTERNS:
        found = pattern.search(message)
        if found:
            window = int(found.group("window"))
            asked = found.groupdict().get("asked")
            return (window if window >= 256 else None), (int(asked) if asked else None)
    return None, None


def margin(counted: int, exact: bool, info: ModelInfo) -> int:
    """Tokens added on top of a count: small where the server counted, the table's measured margin where
    kimi estimated."""
    if exact:
        return max(SERVER_MARGIN_MIN, int(counted * SERVER_MARGIN))
    return int(counted * info.token_margin) + SERVER_MARGIN_MIN


def answer_budget(info: ModelInfo, window: int, prompt: int, configured: int | None = None) -> int | None:
    """The answer budget for a prompt of `prompt` tokens (margin included), or None when the window leaves
    less than the model's smallest useful answer (then the history must shrink first)."""
    cap = min(info.max_output, configured) if configured else info.max_output
    room = window - prompt
    if room < info.answer_room(window):
        return None
    return max(1, min(cap, room))


def answer_fields(info: ModelInfo, budget: int, dropped: set[str]) -> dict[str, int]:
    """The budget under the field this model takes; `max_tokens` where the server refused the other."""
    field = info.answer_field if info.answer_field not in dropped else "max_tokens"
    return {} if field in dropped else {field: budget}
