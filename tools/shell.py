"""Shell: run a command in the session's sandbox, with a timeout and capped output."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field

from kimi_cli.approval.policy import CallApproval
from kimi_cli.sandbox.base import Sandbox
from kimi_cli.tools.background import TaskManager
from kimi_cli.tools.base import Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.errors import ToolError


class ShellApprover(Protocol):
    """Decides whether a command may run; returns None to allow, or the reason it was refused. `call` says
    where relative redirections open (an allow rule never covers `> link-out`) and what a hook decided."""

    async def review_shell(self, command: str, sandbox: str, call: CallApproval | None = None) -> str | None: ...


class ShellParams(BaseModel):
    command: str = Field(description="A bash command line.")
    timeout: int | None = Field(None, ge=1, le=600, description="Seconds before it is killed (default 60).")
    background: bool = Field(
        False, description="Return a task_id at once and run on; you are told when it ends (servers, long builds)."
    )


class Shell(Tool[ShellParams]):
    name = "Shell"
    description = (
        "Run a bash command in the workspace root, in the sandbox the environment block describes (normally: "
        "writes only in the workspace and /tmp, .git read-only, no network). Returns the exit code and output (head "
        "and tail past 30,000 chars). Timeout 60 s by default, 600 at most; for servers, watchers and longer "
        "work use background: true. For builds, tests and running programs; not for what a tool does: ReadFile, "
        "not cat/head/sed -n; Grep, not grep/rg; Glob, not find/ls -R; StrReplaceFile or WriteFile, not sed -i "
        "or echo >; Git, not git. "
        'Example: {"command": "python -m pytest -q tests/test_dates.py -k leap"}'
    )
    Params = ShellParams
    facts = ToolFacts(reads=True, writes=True, commands=True)  # the network only when the sandbox allows it

    def __init__(
        self,
        sandbox: Sandbox,
        default_timeout: int = 60,
        approver: ShellApprover | None = None,
        tasks: TaskManager | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.default_timeout = default_timeout
        self.approver = approver
        self.tasks = tasks

    async def run(self, params: ShellParams, ctx: ToolContext) -> ToolResult:
        if not params.command.strip():
            raise ToolError("command is empty")
        if self.approver is not None:
            refusal = await self.approver.review_shell(params.command, self.sandbox.name, ctx.approval())
            if refusal:
                raise ToolError(f"the command was not run: {refusal}")
        if params.background:
            return await self._background(params.command)
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
        if result.timed_out or result.exit_code != 0:  # a variable it needed may be one the sandbox withheld
            body += self._env_missing(result.output)
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

    def _env_missing(self, output: str) -> str:
        """After a failure: the withheld variables the output names, and the setting (kimi_cli.sandbox.env)."""
        notice = getattr(getattr(self.sandbox, "policy", None), "notice", None)
        return notice.missing_in(output) if notice is not None else ""

    async def _background(self, command: str) -> ToolResult:
        if self.tasks is None or not hasattr(self.sandbox, "spawn_spec"):
            raise ToolError(f"background commands are not available with the {self.sandbox.name} sandbox")
        task = await self.tasks.start(command)
        return ToolResult(
            f"task_id: {task.id}\nstarted in the background ({self.sandbox.name} sandbox); read its output with "
            f"TaskOutput, stop it with TaskStop. You will be told when it finishes.",
            display={"kind": "shell", "command": command, "exit_code": None, "timed_out": False, "task": task.id},
        )
