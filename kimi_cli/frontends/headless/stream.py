"""A headless run as an async stream of its stream-json objects, for callers in process: the SDK
(kimi_cli.sdk) and `kimi mcp serve` (kimi_cli.frontends.mcp_server). The run is HeadlessRun, the same as
`kimi -p --output-format stream-json`: each object yielded is exactly a line that run would print, parsed.

Approvals: without `approve`, calls that ask are refused as in `kimi -p` (nobody can be asked); with it, each
question goes to `approve`, which answers "yes", "always" or "no:<why>" (the why reaches the model).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kimi_cli.frontends.headless.app import HeadlessRun, RunOptions
from kimi_cli.frontends.headless.output import HeadlessRenderer
from kimi_cli.util.jsonsafe import dumps


@dataclass(frozen=True)
class ApprovalRequest:
    """What a call that asks wants: its kind (shell, web, mcp, hook), the text that would run, why it asks,
    and the allow rule "always" would add for the session (empty: "always" is not offered)."""

    kind: str
    question: str
    why: str
    rule: str


Approve = Callable[[ApprovalRequest], Awaitable[str]]
_END = object()


class _QueueRenderer(HeadlessRenderer):
    """stream-json's renderer with each line handed to `put` instead of written (stderr lines stay on stderr)."""

    def __init__(self, put: Callable[[dict[str, Any]], None]) -> None:
        super().__init__("stream-json")
        self._put = put

    def _line(self, obj: dict[str, Any]) -> None:
        self._put(json.loads(dumps(obj)))  # exactly what stdout would carry, parsed


def _approver_with(approve: Approve) -> Callable[[Any], Any]:
    def make(runtime: Any) -> Any:
        from kimi_cli.approval.engine import Approver

        async def ask(question: Any, rule: str) -> str:
            request = ApprovalRequest(getattr(question, "kind", "shell"), str(question), getattr(question, "why", ""),
                                      rule)  # fmt: skip
            answer = await approve(request)
            word, _, why = answer.partition(":")
            if word in ("yes", "always") and (word != "always" or rule):
                return word
            return f"no:{why}" if why else "no"

        mode = "yolo" if runtime.config.yolo else runtime.mode.current
        return Approver(runtime.rules, mode, ask=ask)

    return make


async def stream_run(opts: RunOptions, approve: Approve | None = None) -> AsyncIterator[dict[str, Any]]:
    """Run `opts` (its output_format is taken as stream-json) and yield each object as it comes. The session
    is built in a worker thread (it blocks: packing, MCP servers), so several runs share one event loop."""
    opts.output_format = "stream-json"
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()

    def put(obj: Any) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, obj)

    run = HeadlessRun(opts, _QueueRenderer(put), make_approver=_approver_with(approve) if approve else None)

    async def drive() -> None:
        try:
            if await asyncio.to_thread(run.prepare) is None:
                await run.execute()
        finally:
            put(_END)

    task = asyncio.ensure_future(drive())
    try:
        while (item := await queue.get()) is not _END:
            yield item
        await task  # its exception, if it had one
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
