"""The MCP inspector's CLI mode (npm @modelcontextprotocol/inspector, in .ci/node) drives `kimi mcp serve`
against the scripted model: it lists kimi's tools, and runs `kimi` on a task, getting the answer and the
changed files; over HTTP it gets nothing without the token."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from scripted_server import ScriptedModelServer
from support import ROOT_DIR, TEST_KEY, free_port, git, kimi_executable, require, tool_call, wait_until

INSPECTOR = ROOT_DIR / ".ci" / "node" / "node_modules" / ".bin" / "mcp-inspector"
TOKEN = "inspector-token-0123456789abcdefghijklmnop"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    require("mcp-inspector", INSPECTOR.exists(), "bash .ci/run installs it into .ci/node")
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    (folder / "README.md").write_text("# repo\n")
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "initial")
    return folder


def inspect(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> Any:
    # the inspector gives a server 15 s to connect by default: `kimi mcp serve` took longer at load 10 in CI
    wait = ["--connect-timeout", "60000"] if "--" in args else []
    proc = subprocess.run([str(INSPECTOR), "--cli", *wait, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip
    return proc


def kimi_env(env: dict[str, str], server: ScriptedModelServer) -> dict[str, str]:
    return {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}


def over_stdio(full: dict[str, str], *options: str) -> list[str]:
    """The inspector's options, then `kimi mcp serve` after `--` (with the variables it needs, -e)."""
    passed = [f"{k}={full[k]}" for k in ("HOME", "PATH", "KIMI_PROVIDER", "KIMI_BASE_URL", "KIMI_API_KEY")]
    return [*(arg for pair in passed for arg in ("-e", pair)), *options, "--", *kimi_executable(), "mcp", "serve"]


def test_the_inspector_lists_kimis_tools_and_runs_a_task(
    workspace: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    full = kimi_env(env, server)
    listed = inspect(over_stdio(full, "--method", "tools/list"), workspace, full)
    assert listed.returncode == 0, listed.stderr
    assert {t["name"] for t in json.loads(listed.stdout)["tools"]} == {"kimi", "kimi_reply"}

    server.add(
        {"tool_calls": [tool_call("WriteFile", {"path": "notes.txt", "content": "hello\n"}, "w1")]},
        {"text": "wrote notes.txt"},
    )
    call = ["--method", "tools/call", "--tool-name", "kimi", "--tool-arg", "prompt=write notes"]
    ran = inspect(over_stdio(full, *call), workspace, full)
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert not out.get("isError"), out
    result = out.get("structuredContent") or json.loads(out["content"][0]["text"])
    assert result["answer"] == "wrote notes.txt" and result["files_changed"] == ["notes.txt"]
    assert result["session_id"] and (workspace / "notes.txt").read_text() == "hello\n"


def test_the_inspector_over_http_needs_the_token(
    workspace: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    port = free_port()
    full = {**kimi_env(env, server), "KIMI_MCP_TOKEN": TOKEN}
    proc = subprocess.Popen([*kimi_executable(), "mcp", "serve", "--http", str(port)], cwd=workspace, env=full,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        import httpx

        def up() -> bool:
            assert proc.poll() is None, proc.communicate()[1]  # it exited: say why rather than wait
            try:
                return httpx.get(url, timeout=1).status_code == 401
            except httpx.HTTPError:
                return False

        wait_until(up, 120, "kimi mcp serve --http listening")  # a loaded machine starts it slowly
        base = [url, "--transport", "http", "--method", "tools/list"]
        refused = inspect(base, workspace, env, timeout=60)
        assert refused.returncode != 0 and '"tools"' not in refused.stdout
        allowed = inspect([*base, "--header", f"Authorization: Bearer {TOKEN}"], workspace, env, timeout=60)
        assert allowed.returncode == 0, allowed.stderr
        assert {t["name"] for t in json.loads(allowed.stdout)["tools"]} == {"kimi", "kimi_reply"}
    finally:
        proc.terminate()
        proc.wait(20)
