"""Checkpoints tied to a session: the agent loop's snapshots around a step that may change files, logged.

The log holds `turn` records (a user prompt began) and `checkpoint` records (a snapshot before and after
a step that may change files); kimi_cli.session.undo.points reads them back as undo points.

The "after" snapshot does not hold up the next request: it runs as a deferred job of the session (its
worker thread), and the session makes every later record but an event wait for it (so the next step's tool
calls, and its tools, come after it; `records()`, undo and `close()` see it).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kimi_cli.session.store import Session
from kimi_cli.session.undo.shadow import CheckpointError, ShadowRepo

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop


class SessionCheckpointer:
    """Called by the agent loop around file-changing steps; records tree ids in the session log."""

    def __init__(self, shadow: ShadowRepo, session: Session, notify: Callable[[str], None] | None = None) -> None:
        self.shadow = shadow
        self.session = session
        self.notify = notify  # a notice for the user (the runtime emits it as a Notice event)
        self.failed: str | None = None  # the last failure; later snapshots are still tried
        self._told: set[str] = set()

    def mark_turn(self, message_index: int, prompt: str) -> None:
        self.session.append({"kind": "turn", "message_index": message_index, "prompt": prompt, "time": time.time()})

    async def snapshot(self, phase: str, step: int, message_index: int, tools: list[str]) -> str | None:
        """The tree id of a "before" snapshot (None if it failed). An "after" snapshot is deferred (returns None):
        it completes on the session's worker before anything else about this session is logged."""
        import asyncio  # lazily: `kimi undo` imports this module and must start fast

        if phase == "after":
            loop = asyncio.get_running_loop()
            self.session.defer(lambda: self._deferred(phase, step, message_index, tools, loop))
            return None
        pending = self.session.pending
        if pending is not None:
            await asyncio.wrap_future(pending)
        try:
            tree = await asyncio.to_thread(self.shadow.snapshot)
        except (CheckpointError, OSError) as exc:
            self._failed(phase, step, message_index, str(exc))
            return None
        self._record(phase, step, message_index, tools, tree)
        return tree

    def _deferred(self, phase: str, step: int, message_index: int, tools: list[str], loop: AbstractEventLoop) -> None:
        """A snapshot taken on the session's worker thread; a failure's notice goes to the event loop."""
        try:
            tree = self.shadow.snapshot()
        except (CheckpointError, OSError) as exc:
            self._failed(phase, step, message_index, str(exc), loop)
            return
        self._record(phase, step, message_index, tools, tree)

    def _record(self, phase: str, step: int, message_index: int, tools: list[str], tree: str) -> None:
        record: dict[str, Any] = {
            "kind": "checkpoint",
            "phase": phase,
            "step": step,
            "tree": tree,
            "message_index": message_index,
            "tools": tools,
            "time": time.time(),
        }
        if self.shadow.last_skipped:
            record["not_covered"] = [[path, size] for path, size in self.shadow.last_skipped]
        if self.shadow.last_nested:
            record["nested_repos"] = list(self.shadow.last_nested)
        self.session.append(record)

    def _failed(
        self, phase: str, step: int, message_index: int, error: str, loop: AbstractEventLoop | None = None
    ) -> None:
        """Never silent: the failure goes into the log (`kimi undo --list` shows it) and, once per distinct
        error, to the user as a notice (on the event loop: the UI lives there). The next step tries again."""
        self.failed = error
        self.session.append({"kind": "checkpoint_failed", "phase": phase, "step": step,
                             "message_index": message_index, "error": error[:2000], "time": time.time()})  # fmt: skip
        first_line = error.strip().splitlines()[0][:300] if error.strip() else "unknown error"
        if self.notify is not None and first_line not in self._told:
            self._told.add(first_line)
            message = f"checkpoint {phase} step {step} failed, so undo cannot cover that step: {first_line}"
            if loop is None:
                self.notify(message)
            else:
                with contextlib.suppress(RuntimeError):  # the loop is gone: the log still has it
                    loop.call_soon_threadsafe(self.notify, message)
