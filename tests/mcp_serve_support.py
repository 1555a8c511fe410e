"""Helpers for the tests of `kimi mcp serve` (tests/e2e/test_mcp_serve.py, tests/attacks/mcp/test_serve_*.py):
the server's environment against the scripted model, a git workspace, one MCP Python SDK client session over
stdio, a tool result's payload, and the server over HTTP."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support import TEST_KEY, free_port, git, kimi_executable, wait_until

TOKEN = "t" * 20 + "0123456789abcdefghij"


def serve_env(env: dict[str, str], server: Any) -> dict[str, str]:
    return {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}


def make_repo(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    (folder / "README.md").write_text(f"# {name}\n")
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "initial")
    return folder


async def with_client(
    env: dict[str, str], cwd: Path, body: Any, *extra: str, elicit: Any = None, timeout: float = 120
) -> Any:
    """Start `kimi mcp serve EXTRA...` in cwd, initialize an MCP client session, and await body(session)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=kimi_executable()[0], args=[*kimi_executable()[1:], "mcp", "serve",
                                   *extra], env=env, cwd=str(cwd))  # fmt: skip
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as session,
    ):
        await asyncio.wait_for(session.initialize(), 60)
        return await asyncio.wait_for(body(session), timeout)


def payload(result: Any) -> dict[str, Any]:
    """A successful tool result's object."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(result.content[0].text)


@contextmanager
def http_server(cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """`kimi mcp serve --http PORT` in cwd with `env` (KIMI_MCP_TOKEN in it or not); yields its URL."""
    import httpx

    port = free_port()
    proc = subprocess.Popen([*kimi_executable(), "mcp", "serve", "--http", str(port)], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"

    def up() -> bool:
        assert proc.poll() is None, proc.communicate()[1]  # it exited: say why rather than wait
        try:
            httpx.get(url, timeout=1)
            return True
        except httpx.HTTPError:
            return False

    try:
        wait_until(up, 120, "kimi mcp serve --http listening")  # a loaded machine starts it slowly
        yield url
    finally:
        proc.terminate()
        proc.wait(20)
