"""Helpers for tests that run MCP servers: the reference servers from npm (.ci/node) and PyPI, a folder's
own .kimi/mcp.json, and the everything server over streamable HTTP on loopback."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support import ROOT_DIR, free_port, require, trust_folder, wait_until

BIN = ROOT_DIR / ".ci" / "node" / "node_modules" / ".bin"


def npm_server(name: str) -> str:
    """The path of an npm reference server's program (mcp-server-everything, -filesystem, -memory)."""
    exe = BIN / name
    require(f"node and {name}", exe.exists(), ".ci/run installs it into .ci/node from npm")
    return str(exe)


def pypi_server(name: str) -> str:
    """The console script of a PyPI reference server (mcp-server-git, mcp-server-time)."""
    exe = shutil.which(name)
    require(name, exe is not None, f"pip install {name}")
    return str(exe)


@contextmanager
def var_tmp_home() -> Iterator[Path]:
    """A fake HOME for a sandboxed server's test, with a ~/.kimi/config.toml of short retries, no language servers
    and a 60 s MCP start. In /var/tmp, not pytest's /tmp: bwrap gives the sandbox a private /tmp, which would
    cover a home there and prove nothing about the hidden table."""
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="kimi-mcp-home-", dir="/var/tmp"))
    (home / ".kimi").mkdir()
    (home / ".kimi" / "config.toml").write_text(
        "[retry]\nbase_delay = 0.01\nmax_delay = 0.05\n[lsp]\nenabled = false\n[mcp]\nstartup_timeout = 60\n"
    )
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def write_config(repo: Path, servers: dict) -> None:
    """The folder's own .kimi/mcp.json, the folder trusted (its servers may start: kimi_cli.hostsafe.trust)."""
    (repo / ".kimi").mkdir(exist_ok=True)
    (repo / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    trust_folder(repo)


@contextmanager
def http_everything() -> Iterator[str]:
    """The everything server over streamable HTTP on a free loopback port; yields its URL."""
    port = free_port()
    proc = subprocess.Popen([npm_server("mcp-server-everything"), "streamableHttp"],
                            env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def listening() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        wait_until(listening, timeout=20, what="the MCP server to listen")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(5)
