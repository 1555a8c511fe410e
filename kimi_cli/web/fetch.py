"""fetch_url: GET over http(s) from the host, safe against SSRF, bounded in time and size.

Every hop is resolved and checked before anything is sent: the address must be public unless the host is
in `allowed_private_hosts`. The connection then goes to the address that was checked (the Host header and
TLS name stay the host's), so a second DNS answer cannot swap in 127.0.0.1 (DNS rebinding). Redirects are
followed by hand, at most 5, each re-checked; a hop to another host is also put to the caller (FetchURL
asks the approver again). One deadline covers the whole fetch: a server that dribbles a byte every few
seconds cannot hold it longer than that.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from kimi_cli.web.addresses import host_matches, is_public

MAX_REDIRECTS = 5
TIMEOUT = 20.0
MAX_BYTES = 5 * 1024 * 1024
USER_AGENT = "kimi-cli (+https://github.com/kimi-cli-agent/kimi_cli)"


class FetchError(Exception):
    """Why a URL was not fetched; the message goes to the model."""


@dataclass
class Fetched:
    url: str  # after redirects
    status: int
    content_type: str
    body: bytes
    truncated: bool


async def resolve_checked(host: str, port: int, allowed_private: list[str]) -> str:
    """An address for host that may be used: all of host's addresses must be public, or the host allowed."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise FetchError(f"cannot resolve {host}: {exc.strerror or exc}") from None
    addresses = sorted({str(info[4][0]) for info in infos})
    if not addresses:
        raise FetchError(f"{host} has no address")
    if not host_matches(host, allowed_private):
        blocked = [a for a in addresses if not is_public(a)]
        if blocked:
            raise FetchError(
                f"refused: {host} resolves to {blocked[0]}, a loopback, private, link-local or reserved address. "
                f'If that is intended, add "{host}" to [web] allowed_private_hosts.'
            )
    return addresses[0]


HopCheck = Callable[[str], Awaitable[str | None]]  # the next URL -> None (follow) or why not


async def fetch_url(
    url: str,
    allowed_private: list[str],
    max_bytes: int = MAX_BYTES,
    on_redirect: HopCheck | None = None,
    timeout: float = TIMEOUT,
) -> Fetched:
    """GET `url`, following redirects by hand. `on_redirect` is asked before each hop to another host (it may
    ask the user: that time does not count). One deadline, `timeout` seconds, covers the whole fetch."""
    from kimi_cli.llm.transport import import_httpx

    httpx = import_httpx()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout), trust_env=False, follow_redirects=False) as client:
        for _hop in range(MAX_REDIRECTS + 1):
            try:
                async with asyncio.timeout_at(deadline):
                    hop = await _one_hop(client, httpx, url, allowed_private, max_bytes)
            except TimeoutError:
                raise FetchError(
                    f"{url} did not finish within {timeout:g} s (one deadline for the whole fetch, redirects included)"
                ) from None
            if isinstance(hop, Fetched):
                return hop
            if on_redirect is not None and _host(hop) != _host(url):
                parts = urlsplit(hop)
                if parts.scheme not in ("http", "https") or not parts.hostname:
                    raise FetchError(f"{url} redirects to {hop!r}: only http and https URLs can be fetched")
                # A hop that would be refused anyway is refused before anyone is asked about it.
                await resolve_checked(parts.hostname, _port(parts), allowed_private)
                asked_at = loop.time()
                refusal = await on_redirect(hop)
                deadline += loop.time() - asked_at  # the user's thinking time is not the server's
                if refusal:
                    raise FetchError(f"{url} redirects to {hop}, which was not fetched: {refusal}")
            url = hop
    raise FetchError(f"more than {MAX_REDIRECTS} redirects, starting from the URL given")


def _port(parts: Any) -> int:
    try:
        return int(parts.port or (443 if parts.scheme == "https" else 80))
    except ValueError:
        raise FetchError(f"invalid port in {parts.geturl()!r}") from None


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower().rstrip(".")


async def _one_hop(client: Any, httpx: Any, url: str, allowed_private: list[str], max_bytes: int) -> Fetched | str:
    """One request: the page, or the URL it redirects to."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FetchError(f"only http and https URLs can be fetched, not {url!r}")
    host = parts.hostname
    port = _port(parts)
    address = await resolve_checked(host, port, allowed_private)
    netloc = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    target = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    headers = {"host": parts.netloc.rsplit("@", 1)[-1], "user-agent": USER_AGENT, "accept": "*/*",
               "accept-encoding": "gzip, deflate"}  # fmt: skip
    extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
    try:
        async with client.stream("GET", target, headers=headers, extensions=extensions) as response:
            if response.is_redirect and response.headers.get("location"):
                return urljoin(url, response.headers["location"])
            body, truncated = await _read_capped(response, url, max_bytes)
            ctype = response.headers.get("content-type", "")
            return Fetched(url, response.status_code, ctype, bytes(body), truncated)
    except httpx.TimeoutException:
        raise FetchError(f"{url} did not answer in time") from None
    except httpx.HTTPError as exc:
        raise FetchError(f"fetching {url} failed: {exc or type(exc).__name__}") from None


async def _read_capped(response: Any, url: str, max_bytes: int) -> tuple[bytes, bool]:
    """At most max_bytes of the body with its Content-Encoding undone here, a chunk at a time and never past
    the cap: httpx would inflate each chunk whole, and `gzip, gzip` turns 661 bytes on the wire into 300 MB."""
    import zlib

    encodings = [e.strip().lower() for e in response.headers.get("content-encoding", "").split(",")]
    encodings = [e for e in encodings if e and e != "identity"]
    if len(encodings) > 1 or (encodings and encodings[0] not in ("gzip", "x-gzip", "deflate")):
        raise FetchError(f"{url} is sent with Content-Encoding {', '.join(encodings)}, which is not fetched")
    inflate = zlib.decompressobj(zlib.MAX_WBITS | 32) if encodings else None  # gzip or zlib, by its header
    raw_deflate = encodings == ["deflate"]  # some servers send deflate without the zlib header
    body = bytearray()
    async for chunk in response.aiter_raw():
        if inflate is None:
            body += chunk[: max_bytes - len(body)]
            if len(body) >= max_bytes:
                return bytes(body), True
            continue
        try:
            data = inflate.decompress(chunk, max_bytes - len(body))
        except zlib.error:
            if not raw_deflate or body:
                raise FetchError(f"{url}: the compressed body is corrupt") from None
            raw_deflate, inflate = False, zlib.decompressobj(-zlib.MAX_WBITS)
            data = inflate.decompress(chunk, max_bytes)
        raw_deflate = raw_deflate and not data
        body += data
        if len(body) >= max_bytes or inflate.unconsumed_tail:
            return bytes(body[:max_bytes]), True
    return bytes(body), False
