"""SessionContext: the packed repository in the stable prefix, change notes, and compaction.

The system message itself is assembled by the prefix builder the runtime hands in (`prefix(pack, mode)`),
the same one subagents use; this module supplies the pack section and watches the workspace after it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kimi_cli.context.agents_md import NestedInstructions
from kimi_cli.context.compaction import compacted_history, summary_request
from kimi_cli.context.packer import Pack, RepoPacker
from kimi_cli.context.watch import PackWatcher
from kimi_cli.llm.types import Message
from kimi_cli.media.pipeline import history_image_tokens, message_tokens, strip_images

PrefixFn = Callable[[str, str], Message]  # (pack section, mode's part) -> the system message
SESSION_PACK_INTRO = (
    "The repository, packed for this task (files in full by relevance, then outlines, then every "
    "path). It is a snapshot from the start of the session; later changes arrive as notes.\n"
)
TASK_PACK_INTRO = "The repository, packed for your task:\n"
MIN_TASK_BUDGET = 4000
CHARS_PER_TOKEN = 3.5
BASELINE_FILE = "pack_baseline.json"


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

    def system_message(self, task: str) -> Message:
        """The session's prefix with a fresh pack for `task`; the workspace is watched from this state on."""
        section = ""
        if self.packer is not None:
            pack = self.packer.pack(task, self.budget)
            self.last_pack = pack
            self.watcher = PackWatcher(self.root, self._full_texts(pack))
            section = SESSION_PACK_INTRO + pack.text
        return self.prefix(section, self.mode)

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
        """Once per session: learn how the model's tokenizer compares with our o200k estimate."""
        if self._calibrated or prompt_tokens <= 0 or self.packer is None:
            return
        self._calibrated = True
        from kimi_cli.context.tokens import record_calibration

        texts = [m.get("content") if isinstance(m.get("content"), str) else json.dumps(strip_images(m).get("content"))
                 for m in messages]  # fmt: skip
        raw = self.packer.counter.raw("\n".join(t or "" for t in texts) + json.dumps(tools))
        record_calibration(self.model, raw, prompt_tokens - history_image_tokens(messages))  # text tokens only

    def estimate(self, messages: list[Message], prompt_tokens: int, sent_count: int) -> int:
        """Tokens the next request will carry: the last request's count plus what was added since. An image
        counts by its area (14x14 pixels a token), never by its base64 length (kimi_cli.media.pipeline)."""
        added = messages[sent_count:] if prompt_tokens else messages
        return prompt_tokens + sum(message_tokens(m, CHARS_PER_TOKEN) for m in added)

    def should_compact(self, messages: list[Message], prompt_tokens: int, sent_count: int) -> bool:
        return self.estimate(messages, prompt_tokens, sent_count) >= self.compact_at * self.context_length

    async def compact(
        self, provider: Any, messages: list[Message], todos: list[dict[str, str]], touched: list[str]
    ) -> list[Message]:
        """Summarise with the model, re-pack the repository, and return the new history."""
        completion = await provider.complete(summary_request(messages), [])
        first_user = next((m for m in messages if m.get("role") == "user"), None)
        task = first_user.get("content") if first_user else ""
        system = self.system_message(task if isinstance(task, str) else "")
        self.instructions = NestedInstructions(self.root)  # the summary drops the notes: offer them again
        return compacted_history(system, messages, completion.text, todos, touched, self.context_length // 16)
