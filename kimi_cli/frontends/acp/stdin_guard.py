"""ACP's stdin, one JSON-RPC message a line, checked before the SDK sees it: a bad line gets an error answer
and the reader goes on.

The SDK's reader task dies on a line it cannot parse in a way it does not expect (100,000 nested arrays raise
RecursionError; a line over the stream's limit raises ValueError), and every later request then waits
forever. So each line is parsed here first, with the nesting bounded: a line that is not JSON is answered
-32700 (parse error), one nested deeper than MAX_DEPTH -32600 (invalid request, with its id when it has
one), an overlong line -32700, and none of them reaches the SDK.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from kimi_cli.util import jsonsafe

MAX_DEPTH = 64  # ACP's messages nest a dozen levels; a hostile line nests thousands
PARSE_DEPTH = 900  # decoded up to this deep to find a too-deep request's id (below the recursion limit)
STREAM_LIMIT = 2**26


def _error(code: int, message: str, request_id: Any = None) -> bytes:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


PARSE_ERROR = _error(-32700, "Parse error")


def depth_within(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests at most `limit` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > limit:
                return False
            stack += [(child, depth + 1) for child in (node.values() if isinstance(node, dict) else node)]
    return True


def check_line(line: bytes) -> bytes | None:
    """The error answer for a line the SDK must not see, or None for a line to pass on."""
    if not line.strip():
        return None
    try:  # the bounded reader: thousands of nested brackets are refused before anything is decoded
        message = jsonsafe.loads(line, max_depth=PARSE_DEPTH, max_chars=STREAM_LIMIT)
    except (ValueError, MemoryError):
        return _error(-32700, "Parse error: not JSON, or nested too deeply to read")
    if not depth_within(message, MAX_DEPTH):
        request_id = message.get("id") if isinstance(message, dict) else None
        if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
            request_id = None
        return _error(-32600, f"Invalid request: nested deeper than {MAX_DEPTH} levels", request_id)
    return None


async def checked_stdin(raw: asyncio.StreamReader, writer: asyncio.StreamWriter) -> asyncio.StreamReader:
    """stdin with bad lines answered (as JSON-RPC asks) instead of being passed on; the pump survives any line."""
    checked = asyncio.StreamReader(limit=STREAM_LIMIT)

    async def answer(error: bytes) -> None:
        writer.write(error)
        await writer.drain()

    async def pump() -> None:
        while True:
            try:
                line = await raw.readline()
            except ValueError:  # longer than the stream's limit: the part read is dropped, the rest follows
                await answer(_error(-32700, f"Parse error: a line over {STREAM_LIMIT} bytes"))
                continue
            if not line:
                break
            error = check_line(line)
            if error is not None:
                await answer(error)
                continue
            checked.feed_data(line)
        checked.feed_eof()

    checked.pump = asyncio.ensure_future(pump())  # type: ignore[attr-defined]
    return checked
