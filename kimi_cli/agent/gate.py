"""SessionGate: the one seam between the agent loop and the session's mode and hooks.

The loop calls it at fixed points, one each: a prompt arrives (UserPromptSubmit, and SessionStart before
the first), before and after each tool call (plan mode, PreToolUse, PostToolUse), when the model would stop
(Stop / SubagentStop), before compaction (PreCompact), and before each request (the mode notes). Everything
it decides reads the call's facts and the hooks' answers; no tool is known by name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kimi_cli.tools.base import ToolFacts, ToolResult
from kimi_cli.tools.registry import PreparedCall, ToolRegistry

if TYPE_CHECKING:
    from kimi_cli.approval.modes.state import ModeState
    from kimi_cli.extensions.hooks.session import HookSession

# (question, rule) -> "yes" | "always" | "save" | "no:<why>": the front end's approval question
Confirm = Callable[[str, str], Awaitable[str]]
MAX_STOP_BLOCKS = 8  # a Stop hook that always blocks cannot keep the model going forever


@dataclass
class PromptVerdict:
    blocked: str = ""  # why the prompt was not sent (shown to the user)
    before: list[str] = field(default_factory=list)  # context for the model, before the prompt (SessionStart)
    after: list[str] = field(default_factory=list)  # context after the prompt (UserPromptSubmit)


def _wider(new: ToolFacts, old: ToolFacts) -> bool:
    return (new.writes and not old.writes) or (new.commands and not old.commands) or (new.network and not old.network)


class SessionGate:
    """Plan mode and hooks for one agent (a subagent has its own, with `subagent` set)."""

    def __init__(
        self,
        mode: ModeState | None = None,
        hooks: HookSession | None = None,
        confirm: Confirm | None = None,
        subagent: bool = False,
        start_source: str = "startup",
    ) -> None:
        self.mode = mode
        self.hooks = hooks
        self.confirm = confirm
        self.subagent = subagent
        self.start_source = start_source  # SessionStart's `source`: startup | resume | clear (compact: after_compact)
        self._started = subagent  # SessionStart runs once, before the session's first prompt
        self.stop_blocks = 0

    # --- before each request ---------------------------------------------------------------------------

    def notes(self, registry: ToolRegistry) -> list[str]:
        """What the conversation must be told about the mode since the last request (kimi_cli.approval.modes.plan)."""
        if self.mode is None or self.subagent:
            return []
        from kimi_cli.approval.modes import plan

        change = self.mode.pending()
        if change == "enter":
            return [plan.enter_note(registry.tools)]
        if change == "leave":
            return [plan.leave_note(self.mode.current)]
        return []

    # --- a prompt --------------------------------------------------------------------------------------

    async def prompt(self, text: str) -> PromptVerdict:
        verdict = PromptVerdict()
        self.stop_blocks = 0
        if self.hooks is None:
            return verdict
        if not self._started:
            self._started = True
            started = await self.hooks.session_start(self.start_source)
            verdict.before += started.context
        if self.subagent:
            return verdict
        submitted = await self.hooks.prompt(text)
        if submitted.block or submitted.stop:
            verdict.blocked = submitted.reason or submitted.stop_reason or "a UserPromptSubmit hook blocked it"
        verdict.after += submitted.context
        return verdict

    # --- each tool call --------------------------------------------------------------------------------

    async def before_call(self, call: PreparedCall, registry: ToolRegistry) -> PreparedCall | ToolResult:
        """The call to run (perhaps with a hook's new input), or the result that answers it instead."""
        if call.error is not None or call.tool is None:
            return call  # it answers with its own error
        if self.mode is not None and self.mode.plan:  # a subagent too: its kind was judged, this is the second guard
            from kimi_cli.approval.modes import plan

            refused = plan.refusal(call.name, call.facts, registry.tools)
            if refused:
                return ToolResult(refused, is_error=True)
        if self.hooks is None or not self.hooks.has("PreToolUse", call.name):
            return call
        verdict = await self.hooks.pre_tool(call.name, call.input, call.id)
        if verdict.block or verdict.permission == "deny":
            why = verdict.reason or verdict.permission_reason or "a PreToolUse hook blocked this call"
            return ToolResult(f"blocked by a hook: {why}", is_error=True)
        if verdict.stop:
            return ToolResult(f"blocked by a hook: {verdict.stop_reason}", is_error=True)
        run = call
        if verdict.updated_input is not None:
            changed = registry.prepare_input(call.id, call.name, verdict.updated_input)
            if changed.error is not None:
                return ToolResult(f"a PreToolUse hook changed the input, and it is not valid: {changed.error}", True)
            if _wider(changed.facts, call.facts):
                return ToolResult("refused: a PreToolUse hook changed the input into a call that may do more "
                                  "than the one asked for", is_error=True)  # fmt: skip
            run = changed
        if verdict.permission == "ask":
            question = f"{call.name} {run.arguments[:400]}  (a hook asks: {verdict.permission_reason or 'confirm'})"
            if self.confirm is None:
                return ToolResult("blocked: a hook asks the user to confirm this call, and nobody can be asked here",
                                  is_error=True)  # fmt: skip
            answer = await self.confirm(question, "")
            if answer not in ("yes", "always", "save"):
                return ToolResult(f"the user said no: {answer.partition(':')[2].strip()}".rstrip(": "), True)
            run.hook_allowed = "the user confirmed a hook's question"
        elif verdict.permission == "allow":
            # The call carries it to its tool's approver (registry.run): it spares the question, never a deny
            # rule (kimi_cli.approval.engine).
            run.hook_allowed = verdict.permission_reason or "a hook allowed it"
        if run is not call:
            run.key = call.key  # the loop guard and sharing know it by what the model asked
        return run

    async def after_call(self, call: PreparedCall, result: ToolResult) -> ToolResult:
        """PostToolUse: a block or added context goes to the model with the result."""
        if self.hooks is None or not self.hooks.has("PostToolUse", call.name):
            return result
        response = {"output": result.output, "is_error": result.is_error, "display": result.display}
        verdict = await self.hooks.post_tool(call.name, call.input, call.id, response)
        extra = []
        if verdict.block:
            extra.append(f"[hook] {verdict.reason or 'a PostToolUse hook objected to this result'}")
        extra += [f"[hook context] {text}" for text in verdict.context]
        if extra:
            result.output = (result.output + "\n\n" + "\n".join(extra)).lstrip("\n")
        return result

    # --- the model would stop --------------------------------------------------------------------------

    async def stop(self) -> str:
        """Stop / SubagentStop: a reason for the model to go on (a hook blocked the stop), or ''."""
        if self.hooks is None or self.stop_blocks >= MAX_STOP_BLOCKS:
            return ""
        if not self.hooks.has("SubagentStop" if self.subagent else "Stop"):
            return ""
        verdict = await self.hooks.stop(self.subagent, active=self.stop_blocks > 0)
        if verdict.stop or not verdict.block:
            return ""
        self.stop_blocks += 1
        return verdict.reason or "a Stop hook asks you to go on"

    async def after_compact(self) -> list[str]:
        """SessionStart with source "compact", as Claude Code fires it: what its hooks print goes in after the
        summary, since the context they gave at the start was compacted away with the rest."""
        if self.hooks is None or self.subagent or not self.hooks.has("SessionStart"):
            return []
        started = await self.hooks.session_start("compact")
        return list(started.context)

    async def before_compact(self, trigger: str) -> None:
        """PreCompact; and the summary will not carry the plan-mode note: tell it again after compaction."""
        if self.mode is not None and not self.subagent:
            self.mode.told_plan = False
        if self.hooks is not None and self.hooks.has("PreCompact"):
            await self.hooks.pre_compact(trigger)
