"""The bearer token of `kimi mcp serve --http`: every HTTP request must carry it, or gets 401 and nothing else.

The token is KIMI_MCP_TOKEN where set (at least 32 characters), else a fresh random one the server prints
once on stderr. Loopback alone is not enough: any local process, or a web page through DNS rebinding,
could otherwise drive kimi (the MCP SDK's host check guards against the second, the token against both).
"""

from __future__ import annotations

import hmac
import os
import secrets
from typing import Any

from kimi_cli.errors import ExitCode, KimiError

TOKEN_ENV = "KIMI_MCP_TOKEN"
MIN_TOKEN = 32


def server_token() -> tuple[str, bool]:
    """(the token, whether it was generated here)."""
    given = os.environ.get(TOKEN_ENV, "")
    if given:
        if len(given) < MIN_TOKEN:
            raise KimiError(f"{TOKEN_ENV} is shorter than {MIN_TOKEN} characters: give a longer, random one "
                            "(or unset it and kimi makes one)", ExitCode.USAGE)  # fmt: skip
        return given, False
    return secrets.token_urlsafe(32), True


class BearerGate:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` are refused (401)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "websocket":  # streamable HTTP has none: nothing to serve there
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope.get("type") == "http":
            given = b""
            for name, value in scope.get("headers", []):
                if name.lower() == b"authorization":
                    given = value
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer")]})  # fmt: skip
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
