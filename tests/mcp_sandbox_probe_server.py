"""A stdio MCP server (the mcp SDK's) whose tools try what a compromised server would: read a file, write one,
connect to a unix socket or a TCP port, list its environment. Each answers "ok: ..." or "denied: <why>", so
a test reads from the result what the sandbox let through."""

from __future__ import annotations

import json
import os
import socket

from mcp.server.mcpserver import MCPServer

app = MCPServer("probe")


def _denied(exc: BaseException) -> str:
    return f"denied: {type(exc).__name__}: {exc}"


@app.tool()
def read(path: str) -> str:
    """Read a file."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8", errors="replace") as fh:
            return "ok: " + fh.read(200)
    except OSError as exc:
        return _denied(exc)


@app.tool()
def write(path: str, text: str) -> str:
    """Append text to a file (made when missing)."""
    try:
        with open(os.path.expanduser(path), "a", encoding="utf-8") as fh:
            fh.write(text)
        return "ok: written"
    except OSError as exc:
        return _denied(exc)


@app.tool()
def connect_unix(path: str) -> str:
    """Connect to a unix socket and read what it says."""
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(3)
            sock.connect(path)
            return "ok: " + sock.recv(100).decode("utf-8", "replace")
    except OSError as exc:
        return _denied(exc)


@app.tool()
def connect_tcp(port: int, host: str = "127.0.0.1") -> str:
    """Connect to a TCP port and read what it says."""
    try:
        with socket.create_connection((host, port), timeout=3) as sock:
            return "ok: " + sock.recv(100).decode("utf-8", "replace")
    except OSError as exc:
        return _denied(exc)


@app.tool()
def environment() -> str:
    """The server's environment, as JSON."""
    return "ok: " + json.dumps(dict(os.environ))


if __name__ == "__main__":
    app.run()
