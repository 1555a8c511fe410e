"""MCP secrets: a token carried in a server's URL or command line must never be printed
(kimi mcp add/list/test) nor reach the model or the session file through an error message.

Each attack test sits beside the legitimate use that must keep working."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_cli.cli.mcp import _redacted_args, _redacted_url
from kimi_cli.extensions.mcp.config import ServerConfig
from kimi_cli.extensions.mcp.manager import McpError, McpManager


class _Refuses(http.server.BaseHTTPRequestHandler):
    """An MCP endpoint that answers 401 to everything (an expired token, or a hostile server)."""

    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing_port() -> Iterator[int]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refuses)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()


def _failed(url: str, transport: str, tmp_path: Path) -> tuple[str, str]:
    """(the server's error as kimi mcp list/test and the session notice show it, what a call tells the model)."""
    cfg = ServerConfig(url=url, transport=transport, startup_timeout=10)
    manager = McpManager({"api": cfg}, tmp_path / "logs")
    manager.start()
    try:
        manager.wait_settled()
        error = manager.states["api"].error
        try:
            asyncio.run(manager.call("api", "anything", {}))
            told = ""
        except McpError as exc:
            told = str(exc)
        return error, told
    finally:
        manager.close()


def test_an_sse_servers_http_error_never_carries_the_urls_password_or_token(refusing_port: int, tmp_path: Path) -> None:
    """kimi_cli/extensions/mcp/manager.py `_describe` puts str(exc) in state.error; httpx's HTTPStatusError
    text holds the whole request URL, so `kimi mcp list`/`test` print the password and token, the session
    shows them as a notice, and a tool call hands them to the model (and the session file) as its result."""
    url = f"http://alice:pw-SECRET-1@127.0.0.1:{refusing_port}/sse?access_token=tok-SECRET-2"
    error, told = _failed(url, "sse", tmp_path)
    assert error and "401" in error, error  # still says why
    assert "SECRET" not in error, error
    assert "SECRET" not in told, told


def test_a_streamable_http_servers_error_names_the_failure_without_secrets(refusing_port: int, tmp_path: Path) -> None:
    """The legitimate case: the failure is reported (the server is unusable), with nothing secret in it."""
    url = f"http://alice:pw-SECRET-1@127.0.0.1:{refusing_port}/mcp?access_token=tok-SECRET-2"
    error, told = _failed(url, "http", tmp_path)
    assert error and "SECRET" not in error, error
    assert "api" in told and "SECRET" not in told, told


@pytest.mark.parametrize(
    "url",
    [
        "https://ghp_SECRETabcdef0123456789@git.example.com/mcp",  # a token as the user name (GitHub style)
        "https://mcp.example.com/sse#access_token=SECRET",  # OAuth implicit-flow style fragment
        "https://mcp.example.com/mcp?pass=SECRET",
        "https://mcp.example.com/mcp?sig=SECRET&v=2",
        "https://mcp.example.com/mcp?v=2;token=SECRET",
        "https://mcp.example.com/mcp?X-Amz-Signature=SECRET",
    ],
)
def test_other_spellings_of_a_secret_in_a_url_are_hidden(url: str) -> None:
    """kimi_cli/cli/mcp.py `_redacted_url` hides a password and a query key naming a secret word, but
    not a token given as the user name, nor one in the fragment, nor `pass`/`sig`, nor after `;`."""
    shown = _redacted_url(url)
    assert "SECRET" not in shown, shown
    assert "example.com" in shown, shown  # the host stays, so the user still sees which server it is


def test_a_url_without_secrets_is_shown_as_configured() -> None:
    for url in ("https://mcp.example.com/mcp?v=2&region=eu", "http://[::1]:8080/mcp", "https://h.example/a#top"):
        assert _redacted_url(url) == url
    assert _redacted_url("http://alice:pw@h.example/mcp?api_key=k&v=2") == (
        "http://alice:[hidden]@h.example/mcp?api_key=[hidden]&v=2"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["-y", "mcp-remote", "https://mcp.example.com/mcp", "--header", "Authorization: Bearer SECRET-1"],
        ["-y", "mcp-remote", "https://mcp.example.com/mcp", "--header", "Authorization:Bearer SECRET-1"],
        ["server", "-H", "X-Api-Key: SECRET-1"],
    ],
)
def test_a_header_given_as_an_argument_hides_its_value(args: list[str]) -> None:
    """mcp-remote's documented way to pass a token (`--header "Authorization: Bearer X"`): `_redacted_args`
    looks for NAME=VALUE and `--secret-name VALUE` only, so `kimi mcp add`/`list` print the bearer token."""
    shown = " ".join(_redacted_args(args))
    assert "SECRET" not in shown, shown
    assert "--header" in shown or "-H" in shown


def test_ordinary_arguments_are_shown_as_given() -> None:
    args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/docs", "--header", "Accept: text/plain"]
    assert _redacted_args(args) == args
    assert _redacted_args(["srv", "--api-key", "k", "--port", "8"]) == ["srv", "--api-key", "[hidden]", "--port", "8"]
