"""HookSession: a session's hooks, one method per event. Each builds the event's JSON with Claude Code's
field names, runs the matching hooks (kimi_cli.extensions.hooks.runner) and reads their answers (verdict.py).

Common fields: session_id, transcript_path (kimi's context.jsonl: JSON lines, but kimi's records, not
Claude Code's), cwd, hook_event_name, permission_mode ("plan", "bypassPermissions" for yolo, else
"default"; `kimi_mode` has kimi's own name). Tool events add tool_name (kimi's name), tool_input,
tool_use_id, and after the call tool_response ({output, is_error, display}).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from kimi_cli.extensions.hooks.config import Hook
from kimi_cli.extensions.hooks.runner import HookRunner
from kimi_cli.extensions.hooks.verdict import HookVerdict, read_runs

PERMISSION_MODES = {"plan": "plan", "yolo": "bypassPermissions"}


class SessionLike(Protocol):
    @property
    def id(self) -> str: ...

    path: Path


class HookSession:
    """What the agent loop and the front ends call; `tell` shows hook errors and messages to the user."""

    def __init__(
        self,
        runner: HookRunner,
        session: Callable[[], SessionLike],
        mode: Callable[[], str],
        tell: Callable[[str], None] | None = None,
    ) -> None:
        self.runner = runner
        self.session = session
        self.mode = mode
        self.tell = tell or (lambda message: None)

    @property
    def hooks(self) -> list[Hook]:
        return self.runner.hooks

    def has(self, event: str, tool_name: str | None = None) -> bool:
        return bool(self.runner.matching(event, tool_name))

    def _payload(self, event: str, **fields: Any) -> dict[str, Any]:
        session = self.session()
        mode = self.mode()
        return {
            "session_id": session.id,
            "transcript_path": str(session.path / "context.jsonl"),
            "cwd": str(self.runner.workdir),
            "hook_event_name": event,
            "permission_mode": PERMISSION_MODES.get(mode, "default"),
            "kimi_mode": mode,
            **fields,
        }

    async def _fire(self, event: str, matched: str | None = None, **fields: Any) -> HookVerdict:
        hooks = self.runner.matching(event, matched)
        if not hooks:
            return HookVerdict()
        runs = await self.runner.run(hooks, self._payload(event, **fields))
        verdict = read_runs(event, runs)
        for message in verdict.messages:
            self.tell(message)
        return verdict

    async def pre_tool(self, name: str, tool_input: Any, call_id: str) -> HookVerdict:
        verdict = await self._fire("PreToolUse", name, tool_name=name, tool_input=tool_input, tool_use_id=call_id)
        if verdict.updated_input is not None and verdict.updated_by == "claude":
            from kimi_cli.extensions.hooks.claude import kimi_input

            verdict.updated_input = kimi_input(name, verdict.updated_input, self.runner.workdir)
        return verdict

    async def post_tool(self, name: str, tool_input: Any, call_id: str, response: dict[str, Any]) -> HookVerdict:
        return await self._fire("PostToolUse", name, tool_name=name, tool_input=tool_input, tool_use_id=call_id,
                                tool_response=response)  # fmt: skip

    async def prompt(self, text: str) -> HookVerdict:
        return await self._fire("UserPromptSubmit", prompt=text)

    async def stop(self, subagent: bool, active: bool) -> HookVerdict:
        return await self._fire("SubagentStop" if subagent else "Stop", stop_hook_active=active)

    async def session_start(self, source: str) -> HookVerdict:
        return await self._fire("SessionStart", source=source)

    async def pre_compact(self, trigger: str) -> HookVerdict:
        return await self._fire("PreCompact", trigger=trigger, custom_instructions="")

    async def notification(self, message: str) -> None:
        await self._fire("Notification", message=message)

    def notification_in_background(self, message: str) -> None:
        """Fire the Notification hooks on a thread of their own and return at once: the question they
        announce is asked meanwhile, and a slow hook delays nothing (what it says is logged)."""
        import threading

        hooks = self.runner.matching("Notification")
        if not hooks:
            return
        payload = self._payload("Notification", message=message)

        def fire() -> None:  # what the hooks say goes to the log: `tell` belongs to the session's own thread
            from kimi_cli.util.logs import get_logger

            for text in read_runs("Notification", self.runner.run_sync(hooks, payload)).messages:
                get_logger("hooks").warning("%s", text)

        threading.Thread(target=fire, name="kimi-notification-hook", daemon=True).start()

    def session_end(self, reason: str) -> None:
        """Synchronous: a session ends outside the loop (exit, /clear, a switch)."""
        hooks = self.runner.matching("SessionEnd")
        if not hooks:
            return
        verdict = read_runs("SessionEnd", self.runner.run_sync(hooks, self._payload("SessionEnd", reason=reason)))
        for message in verdict.messages:
            self.tell(message)

    def listing(self) -> list[str]:
        """For /hooks: one line per hook, in the order they run."""
        return [hook.describe() for hook in self.runner.hooks]


def open_hooks(
    workdir: Path, session: Callable[[], SessionLike], mode: Callable[[], str], folder: Any = None
) -> HookSession | None:
    """The workspace's hooks (the user's, and the project's in a trusted folder: from `folder`, the session's
    kimi_cli.hostsafe.trust.FolderTrust); None when there are none."""
    from kimi_cli.extensions.hooks.sources import load_pinned

    hooks, pinned = load_pinned(workdir, folder)
    if not hooks:
        return None
    return HookSession(HookRunner(workdir, hooks, pinned=pinned), session, mode)
