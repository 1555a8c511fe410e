"""FetchURL against a hostile server: the 5 MB cap holds for what kimi holds in memory, not just what it keeps.

The attack: httpx inflates each received chunk whole, so a body sent as `Content-Encoding: gzip,
gzip` (661 bytes on the wire) made kimi allocate 300 MB before the cap cut it, and a few kilobytes more would
exhaust the machine's memory; a single gzip layer still inflated 64 KB chunks to 64 MB at once. And the
address check let a 6to4 address that carries 127.0.0.1 (2002:7f00:1::) through. Each beside the ordinary
compressed page that must still arrive.
"""

from __future__ import annotations

import asyncio
import gzip
import http.server
import threading
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest

from kimi_cli.web.addresses import is_public
from kimi_cli.web.fetch import MAX_BYTES, FetchError, fetch_url

PAGES: dict[str, tuple[str, bytes]] = {}  # path -> (content-encoding, body on the wire)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        encoding, body = PAGES[self.path]
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        if encoding:
            self.send_header("content-encoding", encoding)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    zeros = b"\0" * (300 * 1024 * 1024)
    PAGES["/double"] = ("gzip, gzip", gzip.compress(gzip.compress(zeros, 9), 9))
    PAGES["/single"] = ("gzip", gzip.compress(zeros, 9))
    del zeros
    text = ("hello from a compressed page\n" * 2000).encode()
    PAGES["/gzip"] = ("gzip", gzip.compress(text))
    PAGES["/deflate"] = ("deflate", zlib.compress(text))
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    PAGES["/raw-deflate"] = ("deflate", raw.compress(text) + raw.flush())
    PAGES["/plain"] = ("", text)
    PAGES["/brotli"] = ("br", b"\x0b\x02\x80hello\x03")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def fetch_peak(url: str) -> tuple[object, int]:
    """((body size, truncated) or the FetchError, the peak of Python allocations during the fetch)."""

    async def sizes() -> tuple[int, bool]:  # the body itself never leaves: no repr of 5 MB in the peak
        fetched = await fetch_url(url, ["127.0.0.1"])
        return len(fetched.body), fetched.truncated

    tracemalloc.start()
    try:
        try:
            result: object = asyncio.run(sizes())
        except FetchError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_body_compressed_twice_is_refused_without_inflating_it(base: str) -> None:
    assert len(PAGES["/double"][1]) < 2000  # the whole attack fits in one packet
    result, peak = fetch_peak(base + "/double")
    assert isinstance(result, FetchError) and "gzip, gzip" in str(result)
    assert peak < 20 * 1024 * 1024


def test_a_gzip_bomb_is_read_up_to_the_cap_and_no_further(base: str) -> None:
    result, peak = fetch_peak(base + "/single")
    assert result == (MAX_BYTES, True), result
    assert peak < 8 * MAX_BYTES  # the cap, a copy and zlib's buffers: not 64 MB for every 64 KB received


@pytest.mark.parametrize("path", ["/gzip", "/deflate", "/raw-deflate", "/plain"])
def test_ordinary_compressed_pages_still_arrive_whole(base: str, path: str) -> None:
    fetched = asyncio.run(fetch_url(base + path, ["127.0.0.1"]))
    assert fetched.body == ("hello from a compressed page\n" * 2000).encode() and not fetched.truncated


def test_an_encoding_kimi_did_not_ask_for_is_refused_with_a_reason(base: str) -> None:
    with pytest.raises(FetchError, match="Content-Encoding br"):
        asyncio.run(fetch_url(base + "/brotli", ["127.0.0.1"]))


@pytest.mark.parametrize("address", ["2002:7f00:1::1", "2002:a00:1::", "2002:a9fe:a9fe::1", "::ffff:10.0.0.1"])
def test_ipv6_addresses_that_carry_a_private_ipv4_are_not_public(address: str) -> None:
    assert not is_public(address)


@pytest.mark.parametrize("address", ["2002:808:808::1", "2606:4700:4700::1111", "8.8.8.8", "::ffff:8.8.8.8"])
def test_public_addresses_stay_public(address: str) -> None:
    assert is_public(address)
