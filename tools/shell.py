"""Shell: run a command in the session's sandbox, with a timeout and capped output."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field

from kimi_cli.tools.base import Tool, ToolContext, ToolError, ToolResult
from kimi_cli.tools.sandbox.base import Sandbox


class ShellApprover(Protocol):
    """Decides whether a command may run; returns None to allow, or the reason it was refused."""

    async def review_shell(self, command: str, sandbox: str) -> str | None: ...


class ShellParams(BaseModel):
    command: str = Field(description="A bash command line, run in the workspace root.")
    timeout: int | None = Field(None, ge=1, le=600, description="Seconds before the command is killed (default 60).")


class Shell(Tool[ShellParams]):
    name = "Shell"
    description = (
        "Run a bash command in the workspace (sandboxed: only the workspace and /tmp are writable, the "
        ".git folder is read-only, the network is off unless allowed). stdout and stderr come back together "
        "with the exit code; long output keeps its head and tail. Use the Git tool for git operations."
    )
    Params = ShellParams
    changes_files = True

    def __init__(self, sandbox: Sandbox, default_timeout: int = 60, approver: ShellApprover | None = None) -> None:
        self.sandbox = sandbox
        self.default_timeout = default_timeout
        self.approver = approver

    async def run(self, params: ShellParams, ctx: ToolContext) -> ToolResult:
        if not params.command.strip():
            raise ToolError("command is empty")
        if self.approver is not None:
            refusal = await self.approver.review_shell(params.command, self.sandbox.name)
            if refusal:
                raise ToolError(f"the command was not run: {refusal}")
        timeout = params.timeout or self.default_timeout
        try:
            result = await self.sandbox.run(params.command, timeout)
        except RuntimeError as exc:
            raise ToolError(str(exc)) from None
        if result.timed_out:
            status = f"timed out after {timeout} s (the command and its children were killed)"
        else:
            status = f"exit code: {result.exit_code}"
        body = result.output if result.output else "(no output)"
        return ToolResult(
            f"{status}\n{body}",
            is_error=result.timed_out or result.exit_code != 0,
            display={
                "kind": "shell",
                "command": params.command,
                "exit_code": result.exit_code,
                "timed_out": result.timed_out,
            },
        )
