"""The server's own token count: `POST /tokenize` on llama-server and vLLM, one text block at a time, cached.

kimi's o200k estimate is another model's tokenizer: SmolLM2's counted 7-15% more for code, prose and JSON
and 2.5x more for CJK (bench/RESULTS.md). A server that can count for itself is asked instead, once per
block of text (a message's content, a tool's output, the tools block, a pack), by the block's digest, so a
step costs the blocks it adds. Moonshot's API has no such endpoint here: the model table's ratio and margin
apply there (kimi_cli/context/request_size.py).

llama-server: {"content": TEXT, "add_special": false} -> {"tokens": [...]}.
vLLM:         {"model": M, "prompt": TEXT, "add_special_tokens": false} -> {"count": N, "tokens": [...]}.
The first call finds which one the server speaks; a server that speaks neither is not asked again, in this
process or, for a week, in the next (~/.kimi/endpoints.json, kimi_cli/llm/endpoint_info.py): a plain
OpenAI-compatible API otherwise costs every start two round trips before its first request.

A whole request, as the server's chat template renders it (`count_request`), is counted only where no
reported usage covers the history (the first request, the one after a compaction): llama-server's
/apply-template then /tokenize, vLLM's /tokenize with the messages and tools. The difference from the blocks'
sum is the template's own share (a template may render the tools, or, as SmolLM2's does, not at all).
Plain urllib on loopback-fast calls: the caller's step waits a few milliseconds for a new block.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from kimi_cli.util import jsonsafe

TIMEOUT = 3.0
MAX_CACHED = 20_000  # digests kept; a long session's blocks, not its every byte
MAX_FAILURES = 3  # a server whose /tokenize keeps failing is counted locally from then on


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class ServerTokenizer:
    """Counts text with the server's tokenizer, or says it cannot (None)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = TIMEOUT,
        dialect: str | None = None,
        found: Callable[[str], None] | None = None,
    ) -> None:
        """`dialect`: what an earlier process found ("llama", "vllm", or "" for neither); `found` is told
        what this one finds, where the answers were definite (a 401, a 5xx or no answer is not)."""
        root = base_url.rstrip("/")
        from kimi_cli.util.redact import without_user_info

        root = without_user_info(root)  # urllib refuses user info in the URL; the key is the Bearer token
        self.url = (root[: -len("/v1")] if root.endswith("/v1") else root) + "/tokenize"
        self.api_key = api_key
        self.model = model
        self.timeout = timeout
        self.dialect: str | None = dialect  # "llama" | "vllm" once known; "" once the server answered neither
        self.found = found
        self.failures = 0
        self._unsure = False  # an answer this process got said nothing of /tokenize (401, 403, 429, 5xx)
        self.asked = 0  # requests made (tests and the debug log: cached blocks are not asked again)
        self._cache: dict[bytes, int] = {}
        self._renders_tools: bool | None = None

    @property
    def available(self) -> bool:
        return self.dialect != "" and self.failures < MAX_FAILURES

    def count(self, text: str) -> int | None:
        """Tokens in `text` by the server's own tokenizer (cached by digest), or None."""
        if not text:
            return 0
        key = digest(text)
        if key in self._cache:
            return self._cache[key]
        if not self.available:
            return None
        found = self._ask(text)
        if found is None:
            return None
        if len(self._cache) >= MAX_CACHED:
            self._cache.clear()
        self._cache[key] = found
        return found

    def count_request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int | None:
        """The whole prompt's tokens as the server's template renders it, or None (images, no dialect yet,
        an error). Not cached: the caller asks once per fresh history."""
        if not self.available or not self.dialect or _has_images(messages):
            return None
        payload: dict[str, Any] = {"messages": messages, **({"tools": tools} if tools else {})}
        if self.dialect == "llama":
            root = self.url[: -len("/tokenize")]
            rendered = self._post(payload, root + "/apply-template")
            prompt = rendered.get("prompt") if isinstance(rendered, dict) else None
            if not isinstance(prompt, str):
                return None
            return _count_of(self._post({"content": prompt, "add_special": True, "parse_special": True}))
        return _count_of(self._post({"model": self.model, **payload, "add_generation_prompt": True}))

    def renders_tools(self) -> bool | None:
        """Whether the chat template puts a tools block into the prompt at all (SmolLM2's does not), or None
        (unknown): asked once, by rendering one short message with and without a small tool. The pack is
        sized before the tools are known; where the template drops them, they take none of the window."""
        if self._renders_tools is None and self.available:
            if not self.dialect:
                self.count("x")  # which dialect the server speaks
            bare = self.count_request(_PROBE, None)
            with_tool = self.count_request(_PROBE, _PROBE_TOOLS) if bare is not None else None
            if bare is not None and with_tool is not None:
                self._renders_tools = with_tool > bare
        return self._renders_tools

    def _ask(self, text: str) -> int | None:
        dialects = [self.dialect] if self.dialect else ["llama", "vllm"]
        for dialect in dialects:
            assert dialect is not None
            answer = self._post(self._body(dialect, text))
            if answer is _FAILED:
                return None  # no answer at all: the next block asks again (up to MAX_FAILURES)
            found = _count_of(answer)
            if found is not None:
                if self.dialect is None:
                    self._tell(dialect)
                self.dialect = dialect
                return found
        if self.dialect is None:
            self.dialect = ""  # it answered, but neither way: no /tokenize here
            self._tell("")
        return None

    def _tell(self, dialect: str) -> None:
        if self.found is not None and not (self._unsure and not dialect):
            with contextlib.suppress(Exception):
                self.found(dialect)

    def _body(self, dialect: str, text: str) -> dict[str, Any]:
        if dialect == "llama":
            return {"content": text, "add_special": False}
        return {"model": self.model, "prompt": text, "add_special_tokens": False}

    def _post(self, body: dict[str, Any], url: str | None = None) -> Any:
        self.asked += 1
        request = urllib.request.Request(
            url or self.url,
            data=jsonsafe.utf8(json.dumps(body, ensure_ascii=False)),
            headers={"content-type": "application/json"},
        )
        if self.api_key and self.api_key != "EMPTY":
            request.add_header("authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return jsonsafe.loads(response.read(50_000_000))
        except urllib.error.HTTPError as exc:
            self._unsure = self._unsure or exc.code in (401, 403, 429) or exc.code >= 500
            with contextlib.suppress(Exception):
                exc.close()
            return None  # an answer: this dialect (or /tokenize itself) is not spoken here
        except Exception:  # refused, reset, timed out, not JSON
            self.failures += 1
            return _FAILED


_FAILED: Any = object()
_PROBE: list[dict[str, Any]] = [{"role": "user", "content": "x"}]
_PROBE_TOOLS = [{"type": "function", "function": {"name": "probe", "description": "A probe.",
                                                   "parameters": {"type": "object", "properties": {}}}}]  # fmt: skip
_SHARED: dict[tuple[str, str], ServerTokenizer] = {}


def for_endpoint(base_url: str, api_key: str, model: str) -> ServerTokenizer:
    """The process's one tokenizer for this server and model: the pack made before the first request and the
    provider's requests after it share its counts (and its finding that a server has no /tokenize)."""
    found = _SHARED.get((base_url, model))
    if found is None or found.api_key != api_key:
        if len(_SHARED) > 16:
            _SHARED.clear()
        from kimi_cli.llm import endpoint_info

        found = _SHARED[(base_url, model)] = ServerTokenizer(
            base_url, api_key, model, dialect=endpoint_info.known_tokenizer(base_url, model),
            found=lambda dialect: endpoint_info.remember_tokenizer(base_url, model, dialect),
        )  # fmt: skip
    return found


def _has_images(messages: list[dict[str, Any]]) -> bool:
    return any(
        isinstance(m.get("content"), list)
        and any(isinstance(p, dict) and p.get("type") == "image_url" for p in m["content"])
        for m in messages
    )


def _count_of(answer: Any) -> int | None:
    if not isinstance(answer, dict):
        return None
    if isinstance(answer.get("count"), int):
        return int(answer["count"])
    tokens = answer.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None
