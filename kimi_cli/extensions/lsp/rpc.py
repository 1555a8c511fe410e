"""JSON-RPC 2.0 with a language server over its standard streams, bounded against a hostile or broken server.

A project's own server is code the workspace controls, so everything it sends is untrusted: a header section
over 8 KB, a body over MAX_BODY, JSON nested past jsonsafe's bound or a message that is not JSON-RPC ends the
connection (the server is then stopped and counts as crashed). Requests wait a bounded time and are then
cancelled. What the server asks of the client is answered from a fixed table: it never gets to edit a file
(`workspace/applyEdit` is refused) or reach anything else of kimi's.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from typing import Any

MAX_HEADER = 8 * 1024
MAX_BODY = 8 * 1024 * 1024  # the largest answer kept: a references list of a big repository fits many times
WRITE_TIMEOUT = 5.0  # a server that stops reading its input is stuck
FLOOD_BYTES = 64 * 1024 * 1024  # more than this in FLOOD_WINDOW seconds: the server floods kimi, and is stopped
FLOOD_WINDOW = 30.0
FLOOD_MESSAGES = 20_000  # or more messages than this (pyright's start logs a few hundred)


class RpcError(Exception):
    """The server answered a request with an error, or the connection is gone."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


class ConnectionLost(RpcError):
    pass


Notify = Callable[[str, Any], None]
Answer = Callable[[str, Any], Any]  # a request from the server -> its result (raise LookupError: not handled)


class Connection:
    """One server's stream pair: `request`, `notify`, and `serve` (the read loop; returns when the stream ends)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, on_notify: Notify,
                 on_request: Answer) -> None:  # fmt: skip
        self.reader = reader
        self.writer = writer
        self.on_notify = on_notify
        self.on_request = on_request
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.closed: str = ""  # why the connection ended ('' while open)
        self._write_lock = asyncio.Lock()
        self._window = (0.0, 0, 0)  # (when the current flood window began, bytes and messages read since)

    async def request(self, method: str, params: Any, timeout: float) -> Any:
        """The result of `method`; RpcError for an error answer, TimeoutError past `timeout` (then cancelled)."""
        if self.closed:
            raise ConnectionLost(self.closed)
        ident = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        try:
            await self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            with contextlib.suppress(RpcError):
                await self.notify("$/cancelRequest", {"id": ident})
            raise
        finally:
            self._pending.pop(ident, None)

    async def notify(self, method: str, params: Any) -> None:
        if self.closed:
            raise ConnectionLost(self.closed)
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        async with self._write_lock:
            try:
                self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                await asyncio.wait_for(self.writer.drain(), WRITE_TIMEOUT)
            except (OSError, RuntimeError, TimeoutError) as exc:  # the pipe closed, or nobody reads it
                self.close(f"cannot write to the server ({type(exc).__name__})")
                raise ConnectionLost(self.closed) from None

    async def serve(self) -> None:
        """Read messages until the stream ends or breaks the protocol; pending requests then fail."""
        loop = asyncio.get_running_loop()
        try:
            for count in itertools.count():
                if self.closed:
                    break
                message = await self._read(loop.time())
                if message is None:
                    self.close("the server closed its output")
                    break
                await self._dispatch(message)
                if count % 64 == 63:  # a server that writes without pause must not keep the loop to itself
                    await asyncio.sleep(0)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.close("the server closed its output mid-message")
        except ProtocolBroken as exc:
            self.close(f"the server broke the protocol: {exc}")

    async def _read(self, now: float) -> dict[str, Any] | None:
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial.strip():
                return None
            raise
        except asyncio.LimitOverrunError:
            raise ProtocolBroken("a header section over the limit") from None
        if len(head) > MAX_HEADER:
            raise ProtocolBroken("a header section over 8 KB")
        length = -1
        for line in head.decode("ascii", "replace").split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise ProtocolBroken(f"a Content-Length that is not a number: {value.strip()[:40]!r}") from None
        if length < 0:
            raise ProtocolBroken("a message without a Content-Length")
        if length > MAX_BODY:
            raise ProtocolBroken(f"a {length:,}-byte message (at most {MAX_BODY:,})")
        began, seen, count = self._window
        if now - began > FLOOD_WINDOW:
            began, seen, count = now, 0, 0
        self._window = (began, seen + length, count + 1)
        if seen + length > FLOOD_BYTES or count + 1 > FLOOD_MESSAGES:
            raise ProtocolBroken(f"over {FLOOD_BYTES // 2**20} MB or {FLOOD_MESSAGES:,} messages within "
                                 f"{FLOOD_WINDOW:.0f} s")  # fmt: skip
        body = await self.reader.readexactly(length)
        from kimi_cli.util import jsonsafe

        try:
            message = jsonsafe.loads(body, max_chars=MAX_BODY)
        except ValueError as exc:
            raise ProtocolBroken(f"a message that is not JSON ({str(exc)[:80]})") from None
        if not isinstance(message, dict):
            raise ProtocolBroken("a message that is not a JSON object")
        return message

    async def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str) and "id" in message:  # a request from the server
            await self._answer(message["id"], method, message.get("params"))
        elif isinstance(method, str):
            with contextlib.suppress(Exception):  # a handler's bug never ends the connection
                self.on_notify(method, message.get("params"))
        elif "id" in message:
            future = self._pending.get(message["id"]) if isinstance(message["id"], int) else None
            if future is None or future.done():
                return  # late (cancelled, timed out) or never asked
            error = message.get("error")
            if error is not None:
                text = error.get("message") if isinstance(error, dict) else error
                code = error.get("code") if isinstance(error, dict) else 0
                future.set_exception(RpcError(str(text)[:300], code if isinstance(code, int) else 0))
            else:
                future.set_result(message.get("result"))

    async def _answer(self, ident: Any, method: str, params: Any) -> None:
        if not isinstance(ident, int | str):
            return
        try:
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "result": self.on_request(method, params)}
        except LookupError:
            reply = {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"{method} is not supported"}}
        except Exception as exc:  # a handler's bug, or parameters it cannot read
            reply = {"jsonrpc": "2.0", "id": ident, "error": {"code": -32603, "message": type(exc).__name__}}
        with contextlib.suppress(RpcError):
            await self._send(reply)

    def close(self, why: str) -> None:
        if self.closed:
            return
        self.closed = why
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLost(why))
        self._pending.clear()
        with contextlib.suppress(Exception):
            self.writer.close()


class ProtocolBroken(Exception):
    pass
