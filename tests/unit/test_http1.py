"""kimi's own HTTP/1.1 model transport (kimi_cli/llm/http1.py) against real loopback servers speaking raw HTTP."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kimi_cli.llm.failures import ConnectFailure, HTTPFailure, StreamIncomplete
from kimi_cli.llm.http1 import DirectTransport, proxy_configured
from kimi_cli.llm.transport import HttpxTransport, OpenAITransport, transport_for

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def sse(*texts: str) -> bytes:
    events = [f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': t}}]})}\n\n" for t in texts]
    return ("".join(events) + "data: [DONE]\n\n").encode()


async def read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
    return head[0], headers, await reader.readexactly(int(headers["content-length"]))


def chunked(body: bytes, size: int = 7) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


class Server:
    """A loopback server; `answer(request_number)` gives the raw bytes of each answer; counts connections."""

    def __init__(self, answer: Callable[[int], bytes], close_after: bool = False) -> None:
        self.answer, self.close_after = answer, close_after
        self.connections = 0
        self.requests: list[tuple[str, dict[str, str], bytes]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                self.requests.append(await read_request(reader))
                writer.write(self.answer(len(self.requests)))
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


async def collect(transport: DirectTransport) -> str:
    text = ""
    async for chunk in transport.stream(b'{"model": "m"}', {}):
        text += chunk["choices"][0]["delta"].get("content") or ""
    return text


def run(server: Server | Handler, body: Callable[[str], Awaitable[Any]], tls: ssl.SSLContext | None = None) -> Any:
    async def main() -> Any:
        handler = server.handle if isinstance(server, Server) else server
        srv = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=tls)
        port = srv.sockets[0].getsockname()[1]
        async with srv:
            return await body(f"{'https' if tls else 'http'}://localhost:{port}/v1")

    return asyncio.run(main())


def test_a_chunked_stream_arrives_whole_and_the_connection_serves_the_next_step() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    server = Server(lambda n: head + chunked(sse("hé", "llo", f" {n}")))

    async def body(url: str) -> list[str]:
        transport = DirectTransport(url, "sk-test", 10)
        try:
            return [await collect(transport), await collect(transport), await collect(transport)]
        finally:
            await transport.aclose()

    assert run(server, body) == ["héllo 1", "héllo 2", "héllo 3"]
    assert server.connections == 1  # kept between steps, as httpx kept it
    line, headers, sent = server.requests[0]
    assert line == "POST /v1/chat/completions HTTP/1.1" and sent == b'{"model": "m"}'
    assert headers["authorization"] == "Bearer sk-test" and headers["host"].startswith("localhost:")


def test_a_length_answer_and_one_read_to_the_close() -> None:
    payload = sse("a", "b")
    with_length = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(payload) + payload
    to_close = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n" + payload
    server = Server(lambda n: with_length if n == 1 else to_close, close_after=False)

    async def body(url: str) -> list[str]:
        transport = DirectTransport(url, "EMPTY", 10)
        first = await collect(transport)
        server.close_after = True  # the second answer's end is the connection's close
        return [first, await collect(transport), await collect(transport)]

    assert run(server, body) == ["ab", "ab", "ab"]
    assert "authorization" not in server.requests[0][1]  # EMPTY: a local server's placeholder key, never sent
    assert server.connections == 2  # the read-to-close answer's connection is not kept


def test_a_kept_connection_the_server_dropped_is_replaced_without_a_failure() -> None:
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    server = Server(lambda n: head + chunked(sse(str(n))), close_after=True)  # closes without saying so

    async def body(url: str) -> list[str]:
        transport = DirectTransport(url, "k", 10)
        first = await collect(transport)
        return [first, await collect(transport)]

    assert run(server, body) == ["1", "2"]
    assert server.connections == 2


def test_an_error_status_is_the_servers_words_and_its_retry_after() -> None:
    err = json.dumps({"error": {"message": "slow down"}}).encode()
    server = Server(
        lambda n: b"HTTP/1.1 429 Too Many\r\nretry-after: 3\r\ncontent-length: %d\r\n\r\n%s" % (len(err), err)
    )

    async def body(url: str) -> HTTPFailure:
        with pytest.raises(HTTPFailure) as caught:
            await collect(DirectTransport(url, "k", 10))
        return caught.value

    failure = run(server, body)
    assert (failure.status, failure.message, failure.retry_after) == (429, "slow down", "3")


def test_a_refused_port_an_unknown_host_and_a_silent_server_are_named() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there

    async def refused() -> ConnectFailure:
        with pytest.raises(ConnectFailure) as caught:
            await collect(DirectTransport(f"http://127.0.0.1:{port}/v1", "k", 10))
        return caught.value

    assert asyncio.run(refused()).kind == "refused"

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    async def timed_out(url: str) -> ConnectFailure:
        with pytest.raises(ConnectFailure) as caught:
            await collect(DirectTransport(url, "k", 0.5))
        return caught.value

    assert run(silent, timed_out).kind == "timeout"


def test_a_stream_cut_mid_chunk_is_incomplete_and_a_non_http_answer_too() -> None:
    cut = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + chunked(sse("partial"))[:40]
    garbage = b"SSH-2.0-OpenSSH_9.6\r\n\r\n"
    for answer in (cut, garbage):
        server = Server(lambda n, a=answer: a, close_after=True)  # type: ignore[misc]

        async def body(url: str) -> None:
            with pytest.raises(StreamIncomplete):
                await collect(DirectTransport(url, "k", 10))

        run(server, body)


def test_tls_is_verified_with_ssl_cert_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True)  # fmt: skip
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"

    async def body(url: str) -> str:
        return await collect(DirectTransport(url, "k", 10))

    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert run(Server(lambda n: head + chunked(sse("secure")), close_after=True), body, tls) == "secure"
    monkeypatch.delenv("SSL_CERT_FILE")  # certifi's bundle does not know a self-signed certificate

    async def refused(url: str) -> ConnectFailure:
        with pytest.raises(ConnectFailure) as caught:
            await collect(DirectTransport(url, "k", 10))
        return caught.value

    assert run(Server(lambda n: head + chunked(sse("x")), close_after=True), refused, tls).kind == "connect"


def test_a_proxy_variable_sends_the_request_through_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(transport_for("direct", "https://api.example/v1", "k", 5), DirectTransport)
    assert isinstance(transport_for("httpx", "https://api.example/v1", "k", 5), HttpxTransport)
    assert isinstance(transport_for("openai", "https://api.example/v1", "k", 5), OpenAITransport)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    assert proxy_configured()
    assert isinstance(transport_for("direct", "https://api.example/v1", "k", 5), HttpxTransport)


def test_a_large_chunk_arrives_whole_and_an_endless_error_body_is_cut() -> None:
    big = "x" * 3_000_000
    head = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
    server = Server(lambda n: head + chunked(sse(big), size=4_000_000), close_after=True)  # one 3 MB chunk

    async def body(url: str) -> str:
        return await collect(DirectTransport(url, "k", 10))

    assert run(server, body) == big

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b'HTTP/1.1 500 Oops\r\ntransfer-encoding: chunked\r\n\r\n16\r\n{"message": "broken"} \r\n')
        try:
            while True:  # never ends: kimi stops reading after 1 MB
                writer.write(chunked(b" " * 65536, size=65536)[:-5])
                await writer.drain()
        except ConnectionError:
            pass

    async def failed(url: str) -> HTTPFailure:
        with pytest.raises(HTTPFailure) as caught:
            await collect(DirectTransport(url, "k", 10))
        return caught.value

    failure = run(endless, failed)
    assert failure.status == 500 and failure.message == "broken"
