"""The MCP server of `kimi mcp serve`: the tools `kimi` and `kimi_reply` (kimi_cli.frontends.mcp_server.tasks),
with `--file-tools` the read-only file tools (kimi's own ReadFile, Glob and Grep, confined to the workspace as
for the model), over stdio or over streamable HTTP on 127.0.0.1 behind a bearer token (gate.py).

This module holds the `mcp` import (pyproject's lazy contract): it loads only when the server starts.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from kimi_cli.errors import KimiError
from kimi_cli.frontends.headless.stream import ApprovalRequest
from kimi_cli.frontends.mcp_server.tasks import TaskArgs, TaskRunner

INSTRUCTIONS = (
    "kimi is a coding agent. `kimi` runs a task in a workspace folder and returns the answer, the files it "
    "changed, the cost and a session id; `kimi_reply` continues that session. Commands run in kimi's sandbox."
)


class Approval(BaseModel):
    """What the client's user answers when kimi asks to run something."""

    allow: bool = Field(description="Run it (once)")
    why: str = Field("", description="If not: what to tell kimi instead")


def build_server(roots: list[Path], file_tools: bool = False) -> MCPServer:
    from kimi_cli import __version__

    runner = TaskRunner(roots)
    server: MCPServer = MCPServer("kimi", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    async def run(args: TaskArgs, ctx: Context) -> dict[str, Any]:
        async def progress(step: float, message: str) -> None:
            await ctx.report_progress(step, None, message)

        try:
            return await runner.run(args, progress, _elicitor(ctx))
        except KimiError as exc:
            raise ToolError(str(exc)) from exc  # an error result the client shows; the server goes on

    @server.tool(description="Run a coding task with kimi in a workspace folder (cwd; default: the server's). "
                 "Returns the answer, files_changed, cost_usd and session_id (for kimi_reply). Progress "
                 "notifications tell each step while it runs.")  # fmt: skip
    async def kimi(
        prompt: str,
        ctx: Context,
        cwd: str | None = None,
        model: str | None = None,
        effort: str | None = None,
        sandbox: str | None = None,
        max_steps: int | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return await run(TaskArgs(prompt, cwd, model, effort, sandbox, max_steps, output_schema), ctx)

    @server.tool(description="Continue a kimi session by its session_id (from `kimi`) with a new prompt.")
    async def kimi_reply(
        session_id: str, prompt: str, ctx: Context, cwd: str | None = None, max_steps: int | None = None
    ) -> dict[str, Any]:
        return await run(TaskArgs(prompt, cwd, max_steps=max_steps, session_id=session_id), ctx)

    if file_tools:
        _add_file_tools(server, runner)
    return server


def _elicitor(ctx: Context) -> Any:
    """Approvals through elicitation where the client offers it; None (refused, as `kimi -p`) otherwise."""
    caps = ctx.client_capabilities
    if caps is None or getattr(caps, "elicitation", None) is None:
        return None

    async def approve(request: ApprovalRequest) -> str:
        why = f" ({request.why})" if request.why else ""
        answer = await ctx.elicit(f"kimi asks to run a {request.kind} call{why}:\n{request.question}", Approval)
        if answer.action == "accept" and answer.data is not None:
            return "yes" if answer.data.allow else f"no:{answer.data.why}"
        return "no"

    return approve


def _add_file_tools(server: MCPServer, runner: TaskRunner) -> None:
    async def call(name: str, cwd: str | None, arguments: dict[str, Any]) -> str:
        from kimi_cli.agent.toolbox import default_tools
        from kimi_cli.tools.base import ToolContext
        from kimi_cli.tools.workspace import Workspace

        try:
            folder = runner.workspace(cwd)
        except KimiError as exc:
            raise ToolError(str(exc)) from exc
        args = json.dumps({k: v for k, v in arguments.items() if v is not None})
        result = await default_tools().call(name, args, ToolContext(workspace=Workspace(folder)))
        if result.is_error:
            raise ToolError(result.output)
        return str(result.output)

    @server.tool(description="Read a file of the workspace (read-only; kimi's ReadFile).")
    async def read_file(path: str, cwd: str | None = None, line_offset: int = 1, n_lines: int = 1000) -> str:
        return await call("ReadFile", cwd, {"path": path, "line_offset": line_offset, "n_lines": n_lines})

    @server.tool(description="Find files of the workspace by glob (read-only; kimi's Glob).")
    async def glob(pattern: str, cwd: str | None = None, directory: str | None = None) -> str:
        return await call("Glob", cwd, {"pattern": pattern, "directory": directory})

    @server.tool(description="Search the workspace's files by regular expression (read-only; kimi's Grep).")
    async def grep(pattern: str, cwd: str | None = None, path: str | None = None, glob: str | None = None) -> str:
        return await call("Grep", cwd, {"pattern": pattern, "path": path, "glob": glob})


def serve_stdio(server: MCPServer) -> None:
    """stdio: the protocol owns the real stdout; anything else in the process that writes to fd 1 lands on
    stderr instead, so a stray print can never corrupt the client's stream."""
    import anyio
    from mcp.server.stdio import stdio_server

    protocol_out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    async def main() -> None:
        out = anyio.wrap_file(protocol_out)
        async with stdio_server(stdout=out) as (read, write):
            low = server._lowlevel_server
            await low.run(read, write, low.create_initialization_options())

    anyio.run(main)


def serve_http(server: MCPServer, port: int, token: str) -> None:
    """Streamable HTTP on 127.0.0.1:port/mcp; every request carries `Authorization: Bearer <token>`."""
    import uvicorn

    from kimi_cli.frontends.mcp_server.gate import BearerGate

    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(BearerGate(app, token), host="127.0.0.1", port=port, log_level="warning")
    uvicorn.Server(config).run()
