"""`kimi acp` answers `initialize` before it has imported the ACP SDK.

An editor starts the agent when its panel opens and waits for the `initialize` answer. Importing the
`agent-client-protocol` package builds its pydantic models (~0.7 s here), and the rest of kimi's session
code more; none of it is needed to say who we are and what we can do. So the first line on stdin is read
with plain asyncio: if it is `initialize`, it is answered at once from `initialize_result` (the same JSON
the SDK would send for KimiAcpAgent.initialize; a test compares them) while a thread imports the SDK and
the agent. Everything after it, or everything when the first line is something else, goes through the SDK
as before, on the same streams.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

PROTOCOL_VERSION = 1  # acp.PROTOCOL_VERSION of the SDK kimi ships with (a test checks they agree)
STDIN_LIMIT = 2**26


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    """What KimiAcpAgent.initialize answers, as the SDK serialises it (by alias, unset fields left out)."""
    from kimi_cli import __version__

    requested = params.get("protocolVersion")
    version = min(requested, PROTOCOL_VERSION) if isinstance(requested, int) else PROTOCOL_VERSION
    return {
        "protocolVersion": version,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {"fork": {}},
        },
        "agentInfo": {"name": "kimi", "title": "Kimi", "version": __version__},
    }


def editor_fs(params: dict[str, Any]) -> bool:
    """Whether the client reads and writes files itself (KimiAcpAgent.initialize reads the same)."""
    fs = (params.get("clientCapabilities") or {}).get("fs") or {}
    return bool(fs.get("readTextFile") and fs.get("writeTextFile"))


class _WriteProtocol(asyncio.BaseProtocol):
    """A pipe protocol a StreamWriter can drain on (the SDK's stdio streams do the same)."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        self._paused = True
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    async def _drain_helper(self) -> None:
        if self._paused and self._waiter is not None:
            await self._waiter


async def _stdio() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STDIN_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    protocol = _WriteProtocol()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, sys.stdout)
    return reader, asyncio.StreamWriter(transport, protocol, None, loop)


def _import_session_code() -> None:
    """In a thread, while the editor gets its answer: the SDK and everything a session needs first."""
    import acp
    import acp.schema  # noqa: F401

    import kimi_cli.frontends.acp.agent  # noqa: F401


async def serve_early(flags: dict[str, Any]) -> int:
    loop = asyncio.get_running_loop()
    importing = loop.run_in_executor(None, _import_session_code)
    raw, writer = await _stdio()
    try:
        first = await raw.readline()
    except ValueError:  # a first line over the limit: the guard answers what follows of it
        first = b""
    fs = False
    pending = first  # handed to the SDK unless it was an initialize we answered
    from kimi_cli.frontends.acp.stdin_guard import PARSE_DEPTH, STREAM_LIMIT
    from kimi_cli.util import jsonsafe

    try:  # read as the stdin guard reads every later line
        message = jsonsafe.loads(first, max_depth=PARSE_DEPTH, max_chars=STREAM_LIMIT) if first.strip() else None
    except ValueError:
        message = None
    if isinstance(message, dict) and message.get("method") == "initialize" and "id" in message:
        given = message.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": initialize_result(params)}
        writer.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
        await writer.drain()
        fs, pending = editor_fs(params), b""
    await importing
    from acp import run_agent

    from kimi_cli.frontends.acp.agent import KimiAcpAgent
    from kimi_cli.frontends.acp.stdin_guard import checked_stdin

    agent = KimiAcpAgent(flags)
    agent.editor_fs = fs or agent.editor_fs
    rest = asyncio.StreamReader(limit=STDIN_LIMIT)
    if pending:
        rest.feed_data(pending)

    async def forward() -> None:
        while chunk := await raw.read(1 << 16):
            rest.feed_data(chunk)
        rest.feed_eof()

    pump = asyncio.ensure_future(forward())
    reader = await checked_stdin(rest, writer)
    try:
        # session/fork is in ACP's unstable set: the SDK routes it only with use_unstable_protocol
        await run_agent(agent, writer, reader, use_unstable_protocol=True)  # type: ignore[arg-type]
    finally:
        pump.cancel()
        await agent.close()
    return 0
