"""`kimi mcp serve --http`: any local process (or a page in a browser) can reach 127.0.0.1, so every request
must carry the bearer token. Without it, with a wrong one, or with the token not written as a bearer, the
server answers 401 and runs nothing; beside it, the MCP Python SDK's client with the token lists the tools. A
KIMI_MCP_TOKEN too short to resist guessing is refused at start."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import httpx
from mcp_serve_support import TOKEN, http_server, make_repo, serve_env

from scripted_server import ScriptedModelServer
from support import free_port, kimi_executable

HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_requests_without_the_token_are_refused(
    tmp_path: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    repo = make_repo(tmp_path, "repo")
    with http_server(repo, {**serve_env(env, server), "KIMI_MCP_TOKEN": TOKEN}) as url:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "kimi",
                "arguments": {"prompt": "touch pwned.txt"}}}  # fmt: skip
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                        {"Authorization": f"Bearer {TOKEN[:-1]}"}):  # fmt: skip
            for body in (init, call):
                refused = httpx.post(url, json=body, headers={**ACCEPT, **headers}, timeout=10)
                assert refused.status_code == 401, refused.text
        assert httpx.get(url, timeout=10).status_code == 401
    assert server.requests == [] and not (repo / "pwned.txt").exists()


def test_the_mcp_client_with_the_token_is_served(
    tmp_path: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    repo = make_repo(tmp_path, "repo")

    async def main(url: str) -> list[str]:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with (
            client,
            streamable_http_client(url, http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            return [t.name for t in (await session.list_tools()).tools]

    with http_server(repo, {**serve_env(env, server), "KIMI_MCP_TOKEN": TOKEN}) as url:
        assert set(asyncio.run(asyncio.wait_for(main(url), 60))) == {"kimi", "kimi_reply"}


def test_a_token_too_short_is_refused_at_start(tmp_path: Path, env: dict[str, str]) -> None:
    argv = [*kimi_executable(), "mcp", "serve", "--http", str(free_port())]
    short = {**env, "KIMI_MCP_TOKEN": "short"}
    proc = subprocess.run(argv, cwd=tmp_path, env=short, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "KIMI_MCP_TOKEN is shorter" in proc.stderr
