"""SessionContext: the packed repository in the stable prefix, change notes, compaction, and the window.

The system message itself is assembled by the prefix builder the runtime hands in (`prefix(pack, mode)`),
the same one subagents use; this module supplies the pack section and watches the workspace after it.

Requests are measured by a RequestMeter (the server's own tokenizer where it has one) and kept inside the
window (kimi_cli/context/fitting.py): the pack is clamped to what the window leaves, compaction comes before
a request would leave no room for an answer, the summary request fits, and the compacted history is never
larger than the request it replaced. The agent binds its provider (`bind`): its model entry, its server's
tokenizer, and the window it may learn from a server's "too long".
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kimi_cli.context import fitting
from kimi_cli.context.agents_md import NestedInstructions
from kimi_cli.context.compaction import compacted_history
from kimi_cli.context.packer import Pack, RepoPacker
from kimi_cli.context.request_size import RequestMeter
from kimi_cli.context.watch import PackWatcher
from kimi_cli.llm.failures import ContextOverflow
from kimi_cli.llm.server_tokens import ServerTokenizer
from kimi_cli.llm.types import Message
from kimi_cli.media.pipeline import history_image_tokens, strip_images

PrefixFn = Callable[[str, str], Message]  # (pack section, mode's part) -> the system message
SESSION_PACK_INTRO = (
    "The repository, packed for this task (files in full by relevance, then outlines, then every "
    "path). It is a snapshot from the start of the session; later changes arrive as notes.\n"
)
TASK_PACK_INTRO = "The repository, packed for your task:\n"
MIN_TASK_BUDGET = 4000
BASELINE_FILE = "pack_baseline.json"
NO_SUMMARY = "(no summary: the conversation could not be summarised within the model's window)"


class SessionContext:
    """Builds the prefix once per session (and again at compaction) and watches the workspace after that."""

    def __init__(
        self,
        root: Path,
        prefix: PrefixFn,
        budget: int,
        context_length: int,
        compact_at: float,
        pack_repo: bool = True,
        progress: Callable[[str, int, int], None] | None = None,
        model: str = "",
        server_tokens: Callable[[], ServerTokenizer | None] | None = None,
    ) -> None:
        self.root = root
        self.prefix = prefix
        self.mode = ""  # what a mode (plan mode) appends to the system message; it survives compaction
        self.budget = budget
        self.context_length = context_length
        self.compact_at = compact_at
        self.pack_repo = pack_repo
        if pack_repo:
            from kimi_cli.context.tokens import TokenCounter, load_factor

            self.packer: RepoPacker | None = RepoPacker(
                root, TokenCounter(factor=load_factor(model)), progress=progress
            )
        else:
            self.packer = None
        self.watcher: PackWatcher | None = None
        self.instructions = NestedInstructions(root)  # AGENTS.md below the working directory, offered once each
        self.last_pack: Pack | None = None
        self.model = model
        self._calibrated = False
        from kimi_cli.llm.models import lookup

        # The model's entry and the server's tokenizer come with the provider (`bind`); until then the table's.
        self.meter = RequestMeter(self.packer.counter if self.packer is not None else None, lookup(model))
        self.last_estimate = 0  # the size of the request about to be sent (what a compaction replaces)
        self._tools: Callable[[], list[dict[str, Any]]] = list
        self._sent_tools = 0  # the tools block's tokens in the last reported request
        self._tell: Callable[[str], None] | None = None
        self._pending: list[str] = []  # notices from before the agent was bound (the pack's clamp)
        self._told: set[str] = set()
        # The endpoint's tokenizer, asked only when the estimate would clamp the first pack (a small window):
        # the estimate's margin and the tools' reserve can leave no pack where the server's count leaves one.
        self._server_tokens = server_tokens

    def bind(self, provider: Any, tell: Callable[[str], None], tools: Callable[[], list[dict[str, Any]]]) -> None:
        """The agent's provider (its model entry, window and server tokenizer), where notices go, and the
        current tools block."""
        info = getattr(provider, "model_info", None)
        if info is not None:
            self.meter.info = info
            self.context_length = min(self.context_length, info.context_window)
        self.meter.server = getattr(provider, "server_tokens", None)
        if hasattr(provider, "on_window"):
            provider.on_window = self.learn_window
        self._tools = tools
        self._tell = tell
        for message in self._pending:
            tell(message)
        self._pending.clear()

    def _notice(self, message: str) -> None:
        if message in self._told:
            return
        self._told.add(message)
        if self._tell is not None:
            self._tell(message)
        else:
            self._pending.append(message)

    def learn_window(self, window: int) -> None:
        """The server stated a smaller window (an overflow's message): requests fit that one from now on."""
        if window < self.context_length:
            self._notice(
                f"the server's window is {window:,} tokens, not {self.context_length:,}: requests are fitted "
                "to it from now on (and the next session starts from it)"
            )
            self.context_length = window
            self.meter.info = replace(self.meter.info, context_window=window)

    def system_message(self, task: str, budget: int | None = None) -> Message:
        """The session's prefix with a fresh pack for `task`; the workspace is watched from this state on.
        The pack takes `budget` (the session's) or what the window leaves for it, whichever is less."""
        section = ""
        if self.packer is not None:
            room = self._pack_room(task)
            wanted = self.budget if budget is None else budget
            if fitting.o200k_budget(self.meter, room) < wanted and self._count_on_server():
                room = self._pack_room(task)
            fitted = min(wanted, fitting.o200k_budget(self.meter, room))
            if budget is None and fitted < self.budget:
                self._notice(self._clamp_notice(fitted))
            pack = self.packer.pack(task, fitted) if fitted >= fitting.MIN_PACK else None
            if pack is not None and self.meter.exact and self.meter.text(pack.text) > room > 0:
                # the server counts this pack above the room left: once more, smaller by what it is over
                pack = self.packer.pack(task, int(fitted * room / self.meter.text(pack.text) * 0.95))
            baseline = self.packer.last_fingerprint if pack is not None else None
            self.watcher = PackWatcher(self.root, self._full_texts(pack) if pack is not None else {}, baseline)
            if pack is not None:
                self.last_pack = pack
                section = SESSION_PACK_INTRO + pack.text
        return self.prefix(section, self.mode)

    def _count_on_server(self) -> bool:
        """Before the agent is bound: the endpoint's own tokenizer counts from now on, where it has one."""
        if self.meter.server is not None or self._server_tokens is None:
            return False
        server, self._server_tokens = self._server_tokens(), None
        if server is None or server.count("x") is None:
            return False
        self.meter.server = server
        return True

    def _pack_room(self, task: str) -> int:
        tools = self._tools()
        tools_tokens = self.meter.tools(tools) if tools else None
        if tools_tokens is None and self.meter.exact and self.meter.server is not None:
            # the tools are not known yet: none of the window where the server's template leaves them out
            tools_tokens = 0 if self.meter.server.renders_tools() is False else None
        base = str(self.prefix("", self.mode).get("content", ""))
        return fitting.pack_room(self.meter, self.context_length, self.compact_at, base, task, tools_tokens)

    def _clamp_notice(self, fitted: int) -> str:
        window = f"the model's window ({self.context_length:,} tokens)"
        if fitted < fitting.MIN_PACK:
            return f"{window} leaves no room for the repository pack after the system prompt and tools: no pack"
        return (
            f"the pack budget ({self.budget:,} tokens) is more than {window} leaves for it: the repository is "
            f"packed in {fitted:,}"
        )

    def task_pack(self, task: str, share: float) -> str:
        """A smaller pack section ranked for a subagent's task: `share` of the budget, not saved, not watched."""
        if self.packer is None:
            return ""
        pack = self.packer.pack(task, max(MIN_TASK_BUDGET, int(self.budget * share)), persist=False)
        return TASK_PACK_INTRO + pack.text

    def _full_texts(self, pack: Pack) -> dict[str, str]:
        from kimi_cli.hostsafe.fs import read_at, rooted

        texts = {}
        with rooted(self.root) as root_fd:  # no-follow reads (kimi_cli.hostsafe.fs), as the pack itself
            for entry in pack.by_mode("full"):
                try:
                    texts[entry.path] = read_at(root_fd, entry.path)[0].decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
        return texts

    def resume(self, session_dir: Path) -> str:
        """Watch from the state saved at the end of the last run; returns a note of what changed since."""
        if self.packer is None:
            return ""
        self.watcher = PackWatcher(self.root, {})
        try:
            saved = json.loads((session_dir / BASELINE_FILE).read_text())
        except (OSError, ValueError):
            return ""
        self.watcher.baseline = {k: list(v) for k, v in saved.items()}
        return self.watcher.note()

    def save_baseline(self, session_dir: Path) -> None:
        if self.watcher is not None:
            with contextlib.suppress(OSError):
                from kimi_cli.hostsafe.fs import write_private  # session files are 0600

                write_private(session_dir / BASELINE_FILE, json.dumps(self.watcher.baseline))

    def after_tools(self, own_paths: list[str], unknown_changes: bool, visited: list[str] | None = None) -> str:
        """After a step: files the agent wrote by name are acknowledged (the model saw its own edit); when a
        call may have changed files it cannot name (a command, a subagent, an MCP tool), what changed since
        the pack becomes a note. Instructions (AGENTS.md) of folders below the working directory that the
        step read or wrote in for the first time are offered in a note of their own."""
        notes = [self.instructions.note(visited)] if visited else []
        if self.watcher is not None:
            if own_paths:
                self.watcher.acknowledge([self._relative(p) for p in own_paths])
            if unknown_changes:
                notes.insert(0, self.watcher.note())
        return "\n\n".join(n for n in notes if n)

    def _relative(self, path: str) -> str:
        candidate = Path(path)
        full = candidate if candidate.is_absolute() else self.root / candidate
        from kimi_cli.kernel.contain import below

        try:
            rel = below(self.root.resolve(), full.resolve())
        except (ValueError, OSError):
            return path
        return path if rel is None else rel or "."

    def observe_usage(self, messages: list[Message], tools: list[dict[str, Any]], prompt_tokens: int) -> None:
        """After each answer: what the server's template adds to the blocks (the meter), and once per
        session how the model's tokenizer compares with our o200k estimate."""
        self.meter.observe(messages, tools, prompt_tokens)
        self._sent_tools = self.meter.tools(tools)
        if self._calibrated or prompt_tokens <= 0 or self.packer is None:
            return
        self._calibrated = True
        from kimi_cli.context.tokens import record_calibration

        texts = [m.get("content") if isinstance(m.get("content"), str) else json.dumps(strip_images(m).get("content"))
                 for m in messages]  # fmt: skip
        if self.meter.exact:  # the server counted each block: its tokenizer against o200k, no template in it
            plain = [t for t in texts if isinstance(t, str) and t]
            raw = sum(self.packer.counter.raw(t) for t in plain)
            record_calibration(self.model, raw, sum(self.meter.text(t) for t in plain))
            return
        # block by block, as the meter counted them (kept by digest): no second count of the whole pack
        raw = sum(self.meter.raw(t) for t in texts if t) + self.meter.raw(json.dumps(tools))
        record_calibration(self.model, raw, prompt_tokens - history_image_tokens(messages))  # text tokens only

    def estimate(self, messages: list[Message], prompt_tokens: int, sent_count: int) -> int:
        """Tokens the next request will carry, its margin included: the last request's count plus what was
        added since (messages, and tools that joined), or the whole request counted where no count covers
        it. An image counts by its area (14x14 pixels a token), never by its base64 length."""
        tools = self._tools()
        if prompt_tokens and sent_count:
            added = sum(self.meter.message(m) for m in messages[sent_count:])
            added += max(0, self.meter.tools(tools) - self._sent_tools) if self._sent_tools else 0
            self.last_estimate = prompt_tokens + self.meter.with_margin(added)
        else:
            self.last_estimate = self.meter.request(messages, tools)
        return self.last_estimate

    def should_compact(self, messages: list[Message], prompt_tokens: int, sent_count: int) -> bool:
        """At the compaction threshold, or where the request would leave the model less than its smallest
        useful answer."""
        size = self.estimate(messages, prompt_tokens, sent_count)
        room = self.meter.info.answer_room(self.context_length)
        return size >= self.compact_at * self.context_length or size + room > self.context_length

    async def compact(
        self, provider: Any, messages: list[Message], todos: list[dict[str, str]], touched: list[str]
    ) -> list[Message]:
        """Summarise with the model, re-pack the repository, and return the new history: never larger than
        the request it replaces, inside the window with room for an answer. A history with nothing to
        summarise yet (the first request did not fit) keeps its messages and gets a smaller pack."""
        before = self.last_estimate or self.meter.request(messages, self._tools())
        summary = await self._summary(provider, messages) if fitting.has_turns(messages) else None
        first_user = next((m for m in messages if m.get("role") == "user"), None)
        task = first_user.get("content") if first_user else ""
        task = task if isinstance(task, str) else ""
        self.instructions = NestedInstructions(self.root)  # the summary drops the notes: offer them again
        window = self.context_length
        target = min(before, int(window * self.compact_at) - 1, window - self.meter.info.answer_room(window))
        pack_budget = fitting.o200k_budget(self.meter, self._pack_room(task))

        def build(budget: int | None, text: str | None) -> list[Message]:
            system = self.system_message(task, min(pack_budget, budget) if budget is not None else None)
            if summary is None:
                return [system, *messages[1:]]
            return compacted_history(system, messages, text or "", todos, touched, window // 16)

        new = fitting.shrink_to(
            target, lambda h: self.meter.request(h, self._tools()), build, min(pack_budget, self.budget), summary
        )
        size = self.meter.request(new, self._tools())
        if size > before and summary is None:
            new = messages  # nothing smaller to make: the request stays as it was
        if self.meter.exact and min(size, before) + self.meter.info.answer_room(window) > window:
            raise fitting.too_small(window, min(size, before), self.meter.info.answer_room(window))
        self.last_estimate = min(size, before)
        return new

    async def _summary(self, provider: Any, messages: list[Message]) -> str:
        """The model's summary, from a request that fits the window with its own answer; a window learned
        from the server's refusal gets one more try, then the compaction goes on without a summary."""
        for _ in range(2):
            window = self.context_length
            answer = fitting.summary_budget(self.meter, window)
            request = fitting.fitted_summary_request(self.meter, messages, window, answer)
            try:
                return (await provider.complete(request, [], max_tokens=answer)).text
            except ContextOverflow:
                if self.context_length >= window:  # the server said too long without a smaller window
                    break
        self._notice("the conversation could not be summarised within the window: compacted without a summary")
        return NO_SUMMARY
