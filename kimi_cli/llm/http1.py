"""The default model transport: one HTTP/1.1 connection over asyncio streams, standard library only.

httpx, httpcore, h11 and anyio cost a trivial `kimi -p` ~0.15-0.25 s of imports (issue 47) for what a model request
needs: one POST with a known length, a streamed answer (chunked, a length or read to the close) and a connection
kept for the next step. TLS is verified as httpx verifies it (SSL_CERT_FILE, SSL_CERT_DIR, else certifi's bundle).
Proxies are httpx's to handle: with any proxy variable set, `transport_for` picks `HttpxTransport`.
Raises only the failures in kimi_cli.llm.failures, named as the httpx transport names them.
`timeout` ([retry] request_timeout) bounds as httpx's read timeout does: connecting (at most 30 s), sending and
the wait for the answer's head, then each read of its body on its own. An idle limit, never one on the whole
answer; what a timeout after the first chunk means is the provider's to say (kimi_cli/llm/provider.py).
"""

from __future__ import annotations

import asyncio
import codecs
import os
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from kimi_cli.llm.failures import ConnectFailure, HTTPFailure, StreamIncomplete, connect_failure, error_message
from kimi_cli.llm.sse import SSEDecoder, chunk_from_event

HEAD_LIMIT = 64 * 1024  # status line and headers together; more is not an HTTP server answering
READ_SIZE = 64 * 1024
ERROR_BODY_READ = 1024 * 1024  # of an error answer; error_message reads its first 20,000 bytes
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def proxy_configured(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether any proxy variable is set (either case): then the request goes through httpx, which honours them."""
    return any(environ.get(name) or environ.get(name.upper()) for name in PROXY_VARIABLES)


def tls_context() -> ssl.SSLContext:
    """The certificates httpx (trust_env) would verify with."""
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class _Stale(Exception):
    """A kept connection the server had closed before our request reached it: retried once on a new one."""


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing() and not self.reader._buffer  # type: ignore[attr-defined]

    def close(self) -> None:
        self.writer.close()


class DirectTransport:
    """POST /chat/completions on one kept HTTP/1.1 connection, and the SSE reader."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        parts = urlsplit(base_url.rstrip("/") + "/chat/completions")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConnectFailure("connect", f"not an http(s) URL: {base_url}")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        default_port = self.port == (443 if self.tls else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.headers = {
            "host": host if default_port else f"{host}:{self.port}",
            "accept": "text/event-stream",
            "accept-encoding": "identity",
            "content-type": "application/json",
            "user-agent": "kimi-cli",
        }
        if api_key and api_key != "EMPTY":
            self.headers["authorization"] = f"Bearer {api_key}"
        self.timeout = timeout
        self.connect_timeout = min(30.0, timeout)
        self._conn: _Connection | None = None
        self._tls: ssl.SSLContext | None = None

    async def _open(self) -> _Connection:
        if self.tls and self._tls is None:
            self._tls = tls_context()
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, ssl=self._tls if self.tls else None, limit=HEAD_LIMIT
                )
        except TimeoutError as exc:
            raise ConnectFailure("timeout", f"connecting to {self.host}:{self.port} timed out") from exc
        except OSError as exc:  # ssl.SSLError (a certificate refused) is one too
            raise connect_failure(exc) from exc
        return _Connection(reader, writer)

    async def stream(self, body: bytes, fields: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        from kimi_cli.util import timing

        timing.first("first request built")
        head = f"POST {self.target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in self.headers.items())
        request = (head + f"content-length: {len(body)}\r\n\r\n").encode("latin-1")
        kept, self._conn = self._conn, None
        conn = kept if kept is not None and kept.usable() else None
        if kept is not None and conn is None:
            kept.close()
        try:
            conn, status, headers = await self._exchange(conn or await self._open(), request, body, conn is not None)
        except _Stale:
            conn, status, headers = await self._exchange(await self._open(), request, body, False)
        timing.first("first answer's headers")
        complete = False
        try:
            if status >= 400:
                raw = b""
                async for part in self._body(conn, headers):
                    raw += part
                    if len(raw) > ERROR_BODY_READ:
                        break  # the words are in its start; the connection is closed, not kept
                else:
                    complete = True
                raise HTTPFailure(status, error_message(raw), headers.get("retry-after"))
            decoder = SSEDecoder()
            text = codecs.getincrementaldecoder(_charset(headers))(errors="replace")
            async for part in self._body(conn, headers):
                for event in decoder.feed(text.decode(part)):
                    chunk = chunk_from_event(event)
                    if chunk is not None:
                        yield chunk
            complete = True
            for event in decoder.feed(text.decode(b"", final=True)) + decoder.close():
                chunk = chunk_from_event(event)
                if chunk is not None:
                    yield chunk
        finally:
            # Kept only when its answer was read to the end and the server keeps it; a consumer that stopped early
            # (a cancel, an error) leaves bytes in flight on it, so it is closed.
            delimited = _chunked(headers) or "content-length" in headers  # else the close ended the body
            if complete and delimited and _keeps(headers) and self._conn is None:
                self._conn = conn
            else:
                conn.close()

    async def _exchange(
        self, conn: _Connection, request: bytes, body: bytes, reused: bool
    ) -> tuple[_Connection, int, dict[str, str]]:
        """Send the request and read the answer's head (the body is read from the connection returned)."""
        try:
            async with asyncio.timeout(self.timeout):
                conn.writer.write(request)
                conn.writer.write(body)
                await conn.writer.drain()
                status, headers = await _read_head(conn.reader)
                while 100 <= status < 200:  # an interim answer (100 Continue, 103 Early Hints): the real one follows
                    status, headers = await _read_head(conn.reader)
        except TimeoutError as exc:
            conn.close()
            raise ConnectFailure("timeout", "the server did not answer in time") from exc
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            conn.close()
            if reused and (not isinstance(exc, asyncio.IncompleteReadError) or not exc.partial):
                raise _Stale() from exc
            raise StreamIncomplete(f"connection dropped: {exc or type(exc).__name__}") from exc
        except (asyncio.LimitOverrunError, ValueError) as exc:
            conn.close()
            raise StreamIncomplete(f"bad response: {exc}") from exc
        except OSError as exc:
            conn.close()
            raise StreamIncomplete(f"connection dropped: {exc or type(exc).__name__}") from exc
        return conn, status, headers

    async def _body(self, conn: _Connection, headers: dict[str, str]) -> AsyncIterator[bytes]:
        """The answer's body as it arrives: chunked, a length, or to the close."""
        reader = conn.reader
        try:
            if _chunked(headers):
                while True:
                    async with asyncio.timeout(self.timeout):
                        line = await reader.readuntil(b"\n")
                    size = int(line.split(b";", 1)[0].strip() or b"x", 16)
                    if size == 0:
                        async with asyncio.timeout(self.timeout):
                            while (await reader.readuntil(b"\n")).strip():
                                pass  # trailers
                        return
                    async for data in self._exactly(reader, size):
                        yield data
                    async with asyncio.timeout(self.timeout):
                        await reader.readexactly(2)
            elif "content-length" in headers:
                async for data in self._exactly(reader, int(headers["content-length"])):
                    yield data
            else:
                while True:
                    async with asyncio.timeout(self.timeout):
                        data = await reader.read(READ_SIZE)
                    if not data:
                        return
                    yield data
        except TimeoutError as exc:
            raise ConnectFailure("timeout", "the server stopped sending") from exc
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as exc:
            raise StreamIncomplete(f"connection dropped: {exc or type(exc).__name__}") from exc
        except ValueError as exc:
            raise StreamIncomplete(f"bad chunk in the response: {exc}") from exc

    async def _exactly(self, reader: asyncio.StreamReader, size: int) -> AsyncIterator[bytes]:
        """`size` bytes in pieces as they arrive: a declared size is never a buffer of that size."""
        while size > 0:
            async with asyncio.timeout(self.timeout):
                data = await reader.read(min(size, READ_SIZE))
            if not data:
                raise asyncio.IncompleteReadError(b"", size)
            size -= len(data)
            yield data

    async def aclose(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1."):
        raise ValueError(f"not an HTTP/1 status line: {lines[0][:80]!r}")
    status = int(rest.split(" ", 1)[0])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"bad header line: {line[:80]!r}")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    headers[":version"] = version
    return status, headers


def _chunked(headers: dict[str, str]) -> bool:
    return "chunked" in headers.get("transfer-encoding", "").lower()


def _keeps(headers: dict[str, str]) -> bool:
    connection = headers.get("connection", "").lower()
    if headers.get(":version") == "HTTP/1.0":
        return "keep-alive" in connection
    return "close" not in connection


def _charset(headers: dict[str, str]) -> str:
    for param in headers.get("content-type", "").split(";")[1:]:
        name, _, value = param.strip().partition("=")
        if name.lower() == "charset":
            try:
                return codecs.lookup(value.strip("\"' ")).name
            except LookupError:
                break
    return "utf-8"
