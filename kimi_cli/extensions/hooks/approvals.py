"""A PreToolUse hook that answers `permissionDecision: "allow"` lets its call run without kimi's approval
question, as in Claude Code (the sandbox still applies). The tools hold this wrapper around the session's
approver; it reads the decision the gate set for the running call (kimi_cli.agent.gate.HOOK_ALLOWED)."""

from __future__ import annotations

from typing import Any

from kimi_cli.agent.gate import HOOK_ALLOWED


class HookAwareApprover:
    """Delegates everything to the session's approver, except a call a hook allowed: no question."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def review_shell(self, command: str, sandbox: str) -> str | None:
        if HOOK_ALLOWED.get() is not None:
            return None
        return await self.inner.review_shell(command, sandbox)  # type: ignore[no-any-return]

    async def review_web(self, host: str, url: str) -> str | None:
        if HOOK_ALLOWED.get() is not None:
            return None
        return await self.inner.review_web(host, url)  # type: ignore[no-any-return]

    async def review_mcp(self, tool_name: str, arguments: str) -> str | None:
        if HOOK_ALLOWED.get() is not None:
            return None
        return await self.inner.review_mcp(tool_name, arguments)  # type: ignore[no-any-return]
