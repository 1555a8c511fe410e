"""How many tokens a request holds, by the server's own count where it has one, else by kimi's estimate.

A request is its messages and its tools block. Each text block (a message's content, a call's arguments, a
tool's output, the tools block) is counted once: by the server's `/tokenize` (llama-server, vLLM:
kimi_cli/llm/server_tokens.py, cached by digest there), or by the bundled o200k tokenizer scaled by the
model table's `token_ratio` and the factor learned from the server's usage (kimi_cli/context/tokens.py).
Counts are kept per message object, so a step counts only the messages it added.

What the count cannot see is the chat template's own tokens (role markers, how it renders the tools): the
first usage the server reports teaches the difference (`observe`), and a margin covers the rest
(kimi_cli/llm/window.py: a small one for a server's count, the table's measured `token_margin` for an
estimate).
"""

from __future__ import annotations

import json
from typing import Any

from kimi_cli.context.tokens import TokenCounter
from kimi_cli.llm.models import ModelInfo
from kimi_cli.llm.server_tokens import ServerTokenizer
from kimi_cli.llm.types import Message
from kimi_cli.llm.window import SERVER_MARGIN_MIN, margin
from kimi_cli.media.pipeline import image_urls, url_tokens

KEEP_CHARS = 2_048  # blocks at least this long are counted once and kept by digest
SHORT_BYTES = 512  # shorter blocks are bounded by their bytes until the tokenizer is loaded anyway
PER_MESSAGE = 4  # role markers a chat template adds around each message (ChatML: <|im_start|>role\n ... <|im_end|>)


def _texts(message: Message) -> list[str]:
    """The text blocks of a message, images left out (they count by their area)."""
    out: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        out.append(content)
    elif isinstance(content, list):
        out += [str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") != "image_url"]
    if message.get("reasoning_content"):
        out.append(str(message["reasoning_content"]))
    if message.get("tool_calls"):
        out.append(json.dumps(message["tool_calls"], ensure_ascii=False, separators=(",", ":")))
    if message.get("tools"):  # a K3 tools declaration inside the history
        out.append(json.dumps(message["tools"], ensure_ascii=False, separators=(",", ":")))
    return out


class RequestMeter:
    """Counts requests for one model on one server; `exact` while the server counts for itself."""

    def __init__(self, counter: TokenCounter | None, info: ModelInfo, server: ServerTokenizer | None = None) -> None:
        self.counter = counter
        self.info = info
        self.server = server
        self.template = 0  # the chat template's own tokens, learned from the first usage a server reports
        self._messages: dict[int, tuple[Message, int]] = {}
        self._tools: tuple[object, int] | None = None
        self._big: dict[str, int] = {}  # long blocks' raw counts by text (hashed by the dict, compared on a hit)
        # the last whole-request count, keyed by the ids of its messages and of its tools block
        self._full: tuple[tuple[tuple[int, ...], int], int] | None = None

    @property
    def exact(self) -> bool:
        return self.server is not None and self.server.available

    def text(self, text: str) -> int:
        if not text:
            return 0
        if self.server is not None:
            found = self.server.count(text)
            if found is not None:
                return found
        return round(self.raw(text) * self.scale)

    def raw(self, text: str) -> int:
        """o200k tokens of one block. A block the size of a pack or the tools block is counted once and kept
        by digest (tokens.sqlite), in memory and across runs; a short one counts with the tokenizer once it
        is loaded, else as its UTF-8 bytes, which no byte-level BPE count exceeds (an upper bound, so a
        trivial `kimi -p` over a cached pack loads no tokenizer; issue 47)."""
        counter = self.counter
        if counter is None:
            return (len(text) + 3) // 4
        if len(text) >= KEEP_CHARS:
            held = self._big.get(text)
            if held is None:
                held = counter.raw_cached(text)
                if len(self._big) > 64:
                    self._big.clear()
                self._big[text] = held
            return held
        if not counter.loaded and len(text) <= SHORT_BYTES:
            return len(text.encode("utf-8", "surrogatepass"))
        return counter.raw(text)

    @property
    def scale(self) -> float:
        """The model's tokens per o200k token: learned from the server's usage once it reported any
        (tokens.load_factor), the model table's `token_ratio` before."""
        learned = self.counter.factor if self.counter is not None else 1.0
        return learned if learned != 1.0 else self.info.token_ratio

    def message(self, message: Message) -> int:
        """One message's tokens; kept for the message object (the history is append-only between compactions)."""
        key = id(message)
        held = self._messages.get(key)
        if held is not None and held[0] is message:
            return held[1]
        tokens = PER_MESSAGE + sum(self.text(t) for t in _texts(message))
        tokens += sum(url_tokens(url, self.info.image_patch) for url in image_urls(message))
        if len(self._messages) > 50_000:
            self._messages.clear()
        self._messages[key] = (message, tokens)
        return tokens

    def tools(self, tools: list[dict[str, Any]] | None) -> int:
        if not tools:
            return 0
        if self._tools is None or self._tools[0] is not tools:
            self._tools = (tools, self.text(json.dumps(tools, ensure_ascii=False, separators=(",", ":"))))
        return self._tools[1]

    def counted(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> int:
        """The blocks' own tokens, before the template's share and the margin."""
        return sum(self.message(m) for m in messages) + self.tools(tools)

    def request(self, messages: list[Message], tools: list[dict[str, Any]] | None = None) -> int:
        """The whole request as the server will count it, the margin included (an upper bound). Where the
        server can render and count the whole prompt, it does, once per history (the first request, the
        one after a compaction): the template's share is then known, not guessed."""
        counted = self.counted(messages, tools)
        key = (tuple(map(id, messages)), id(tools))
        if self.exact and self._full is not None and self._full[0] == key:
            return self._full[1] + SERVER_MARGIN_MIN
        if self.exact and self.server is not None:
            full = self.server.count_request(messages, tools)
            if full is not None:
                self.template = full - counted
                self._full = (key, full)
                return full + SERVER_MARGIN_MIN
        return self.with_margin(counted + self.template)

    def with_margin(self, tokens: int) -> int:
        return tokens + margin(tokens, self.exact, self.info) if tokens > 0 else 0

    def observe(self, messages: list[Message], tools: list[dict[str, Any]] | None, reported: int) -> None:
        """The server's prompt_tokens for a request of these messages: the template's share is what it
        counted beyond the blocks (negative where the template leaves something out, as SmolLM2's drops
        the tools and the calls)."""
        if reported <= 0 or not self.exact:
            return  # an estimate's error is the token factor's to learn (tokens.record_calibration)
        self.template = reported - self.counted(messages, tools)
