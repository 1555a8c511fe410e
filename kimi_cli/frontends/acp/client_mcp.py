"""The editor's MCP servers (session/new `mcpServers`) handed to the session's config without a file on disk.

The client's list may carry secrets (env values, Authorization headers). They are converted to our
mcpServers JSON in an anonymous in-memory file (memfd) that the config loader reads once as
/proc/self/fd/N; it is closed as soon as the session is built. Where memfd is missing, a 0600 file in a
0700 folder under ~/.kimi is used and deleted the same way. Nothing is left in /tmp.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any


def convert(servers: Any) -> dict[str, Any]:
    """ACP's mcpServers list as our `mcpServers` object."""
    converted: dict[str, Any] = {}
    for server in servers or []:
        data = server.model_dump() if hasattr(server, "model_dump") else dict(server)
        name = data.get("name") or f"server{len(converted)}"
        if data.get("command"):
            env = {e["name"]: e["value"] for e in data.get("env") or []}
            converted[name] = {"command": data["command"], "args": data.get("args") or [], "env": env}
        elif data.get("url"):
            headers = {h["name"]: h["value"] for h in data.get("headers") or []}
            converted[name] = {"url": data["url"], "headers": headers, "type": data.get("type") or "http"}
    return converted


@contextlib.contextmanager
def client_mcp_config(servers: Any) -> Iterator[str | None]:
    """A path the config loader can read while the block runs; None when the client gave no servers."""
    if not servers:
        yield None
        return
    data = json.dumps({"mcpServers": convert(servers)}).encode()
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("kimi-acp-mcp", os.MFD_CLOEXEC)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    from kimi_cli.hostsafe.fs import write_private
    from kimi_cli.util.paths import kimi_home

    path = kimi_home() / "tmp" / f"acp-mcp-{os.getpid()}-{id(data)}.json"
    write_private(path, data.decode())
    try:
        yield str(path)
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
