"""No MCP server (nor anything it started) outlives the kimi that started it, however kimi ends.

As found: a trusted stdio server was still running, with parent pid 1, after `kimi acp` ended. The MCP SDK
starts each server in a session of its own and stops it only from kimi's own cleanup: kimi killed by SIGTERM
(`kimi acp` has no handler), by its watchdog after a slow cleanup, or by SIGKILL left a server that does not
exit at the end of its stdin running under init, with whatever it had started. Each server now runs under a
launcher whose parent-death signal takes the server's process group down with kimi
(kimi_cli.hostsafe.launch).

The server here answers its tools normally (the legitimate use: its tool result reaches the model), starts a
helper process of its own, and ignores the end of its stdin. After kimi ends, both must be gone.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import acp
import pexpect
import pytest

from scripted_server import ScriptedModelServer
from support import TEST_KEY, TESTS_DIR, kimi_executable, processes_with, tool_call, tool_results, wait_until

FIXTURE = TESTS_DIR / "mcp_fixture_server.py"


def stubborn_server(home: Path, marker: str) -> None:
    """~/.kimi/mcp.json: the user's own server `s` (tool t000), which starts a helper and, at the end of its
    stdin, keeps running. `marker` is in both command lines."""
    code = (
        "import runpy, subprocess, sys, time; "
        f"subprocess.Popen(['sh', '-c', 'sleep 600; : {marker}'], stdin=subprocess.DEVNULL, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
        f"sys.argv = [{str(FIXTURE)!r}, 'many', '1']; runpy.run_path({str(FIXTURE)!r}, run_name='__main__'); "
        "time.sleep(600)"
    )
    server = {"command": sys.executable, "args": ["-c", code, marker]}
    (home / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": {"s": server}}))


def gone(marker: str) -> None:
    try:
        wait_until(lambda: processes_with(marker) == [], timeout=15, what=f"the processes of {marker} to end")
    finally:
        for pid in processes_with(marker):  # never leave them to the next test
            os.kill(pid, signal.SIGKILL)


def full_env(env: dict, server: ScriptedModelServer) -> dict:
    return {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}


class Client:
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        return None

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kw: Any) -> Any:
        from acp.schema import AllowedOutcome, RequestPermissionResponse

        return RequestPermissionResponse(outcome=AllowedOutcome(option_id="allow_once", outcome="selected"))


@pytest.mark.parametrize("end", ["stdin EOF", "SIGTERM", "SIGKILL"])
def test_kimi_acp_leaves_no_mcp_server_behind(
    end: str, repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    marker = f"acp-outlive-{end.replace(' ', '-')}-{os.getpid()}"
    stubborn_server(home, marker)
    server.add({"tool_calls": [tool_call("mcp__s__t000", {}, "m")]}, {"text": "done"})

    async def flow() -> int:
        exe = kimi_executable()
        async with acp.spawn_agent_process(lambda _a: Client(), exe[0], *exe[1:], "acp", env=full_env(env, server),
                                           cwd=str(repo)) as (conn, proc):  # fmt: skip
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(repo), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("use the tool")])
            assert len(processes_with(marker)) >= 2  # the server and its helper (and the launcher)
            if end == "stdin EOF":
                proc.stdin.close()
            else:
                proc.send_signal(signal.SIGTERM if end == "SIGTERM" else signal.SIGKILL)
            return await asyncio.wait_for(proc.wait(), 60)

    asyncio.run(asyncio.wait_for(flow(), 150))
    assert "t000" in tool_results(server, 1)[0]  # the server worked while kimi ran
    gone(marker)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_kimi_p_ended_mid_run_leaves_no_mcp_server_behind(
    sig: signal.Signals, repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    marker = f"p-outlive-{sig.name}-{os.getpid()}"
    stubborn_server(home, marker)
    busy = f"sleep 120 # busy-{marker}"
    server.add(
        {"tool_calls": [tool_call("mcp__s__t000", {}, "m")]},
        {"tool_calls": [tool_call("Shell", {"command": busy, "timeout": 200}, "s")]},
        {"text": "done"},
    )
    proc = subprocess.Popen([*kimi_executable(), "-p", "go", "--yolo"], cwd=repo, env=full_env(env, server),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        wait_until(lambda: processes_with(f"busy-{marker}"), timeout=60, what="kimi to be running its command")
        assert "t000" in tool_results(server, 1)[0]
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    gone(marker)


def test_the_terminal_ended_by_sigterm_leaves_no_mcp_server_behind(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    marker = f"tui-outlive-{os.getpid()}"
    stubborn_server(home, marker)
    server.add({"tool_calls": [tool_call("mcp__s__t000", {}, "m")]}, {"text": "used it"})
    exe = kimi_executable()
    full = {**full_env(env, server), "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    child = pexpect.spawn(exe[0], [*exe[1:], "--yolo"], cwd=str(repo), env=full, dimensions=(50, 160),
                          encoding="utf-8", timeout=60)  # fmt: skip
    try:
        child.expect("❯")
        child.send("use the tool\r")
        child.expect("used it")
        assert "t000" in tool_results(server, 1)[0]
        child.kill(signal.SIGTERM)
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    gone(marker)
