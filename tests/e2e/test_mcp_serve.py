"""`kimi mcp serve` driven by the official MCP Python SDK's client against the scripted model: its tools, a
task's answer, changed files, cost and session (with progress notifications), kimi_reply continuing it, two
tasks in two workspaces running at once each confined to its own, approvals (elicitation's no reaches the
model; a client without elicitation gets kimi -p's refusal), cwd outside the served roots refused, and HTTP
refusing a request without the bearer token."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sandbox_fixtures import backends, sandbox_flags

from scripted_server import ScriptedModelServer
from support import TEST_KEY, free_port, git, kimi_executable, tool_call, wait_until

TOKEN = "t" * 20 + "0123456789abcdefghij"


def serve_env(env: dict[str, str], server: ScriptedModelServer) -> dict[str, str]:
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
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(result.content[0].text)


def test_lists_its_tools_runs_a_task_and_replies_in_its_session(
    tmp_path: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    repo = make_repo(tmp_path, "repo")
    server.add(
        {"tool_calls": [tool_call("WriteFile", {"path": "notes.txt", "content": "hello\n"}, "w1")],
         "usage": {"prompt_tokens": 900, "completion_tokens": 10, "cached_tokens": 0}},
        {"text": "wrote notes.txt", "usage": {"prompt_tokens": 950, "completion_tokens": 5, "cached_tokens": 900}},
        {"text": "it says hello"},
    )  # fmt: skip
    progress: list[str] = []

    async def body(session: Any) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        tools = [t.name for t in (await session.list_tools()).tools]

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append(message or "")

        first = payload(await session.call_tool("kimi", {"prompt": "write notes"}, progress_callback=on_progress))
        reply = payload(await session.call_tool("kimi_reply", {"session_id": first["session_id"],
                                                               "prompt": "what does it say?"}))  # fmt: skip
        return tools, first, reply

    tools, first, reply = asyncio.run(with_client(serve_env(env, server), repo, body))
    assert set(tools) == {"kimi", "kimi_reply"}  # the file tools are opt-in
    assert first["answer"] == "wrote notes.txt" and first["files_changed"] == ["notes.txt"]
    assert first["reason"] == "done" and not first["is_error"] and first["cost_usd"] is not None
    assert (repo / "notes.txt").read_text() == "hello\n"
    assert any("step 1" in p for p in progress) and any("WriteFile" in p for p in progress), progress
    assert reply["session_id"] == first["session_id"] and reply["answer"] == "it says hello"
    assert reply["files_changed"] == []
    assert "write notes" in json.dumps(server.requests[2]["messages"])  # the reply continued the session


def test_file_tools_are_served_when_asked_and_read_only_within_the_workspace(
    tmp_path: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    repo = make_repo(tmp_path, "repo")

    async def body(session: Any) -> tuple[list[str], Any, Any]:
        tools = [t.name for t in (await session.list_tools()).tools]
        inside = await session.call_tool("read_file", {"path": "README.md"})
        outside = await session.call_tool("read_file", {"path": "../../../etc/passwd"})
        return tools, inside, outside

    tools, inside, outside = asyncio.run(with_client(serve_env(env, server), repo, body, "--file-tools"))
    assert {"read_file", "glob", "grep"} <= set(tools) and "write_file" not in tools
    assert "# repo" in inside.content[0].text and not inside.is_error
    assert outside.is_error and "root:" not in outside.content[0].text


@pytest.mark.parametrize("backend", backends())
def test_two_tasks_in_two_workspaces_run_at_once_each_confined_to_its_own(
    backend: str, tmp_path: Path, home: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    sandbox_flags(backend, home)  # docker: the test image (or a skip where docker is not usable)
    a, b = make_repo(tmp_path / "work", "a"), make_repo(tmp_path / "work", "b")
    for name, other in (("alpha", "b"), ("beta", "a")):
        command = f"sleep 4; echo {name} > {name}.txt; echo {name} > ../{other}/from_{name}.txt; true"
        server.add(
            {"match": f"task {name}", "tool_calls": [tool_call("Shell", {"command": command}, f"s-{name}")]},
            {"match": f"task {name}", "text": f"{name} done"},
        )  # fmt: skip

    async def body(session: Any) -> list[tuple[dict[str, Any], float, float]]:
        async def one(name: str, cwd: Path) -> tuple[dict[str, Any], float, float]:
            began = time.monotonic()
            args = {"prompt": f"task {name}", "cwd": str(cwd), "sandbox": backend}
            out = payload(await session.call_tool("kimi", args))
            return out, began, time.monotonic()

        return list(await asyncio.gather(one("alpha", a), one("beta", b)))

    (ra, _, end_a), (rb, _, end_b) = asyncio.run(
        with_client(serve_env(env, server), tmp_path / "work", body, timeout=180)
    )
    assert ra["answer"] == "alpha done" and rb["answer"] == "beta done"
    assert ra["files_changed"] == ["alpha.txt"] and rb["files_changed"] == ["beta.txt"]
    assert (a / "alpha.txt").read_text() == "alpha\n" and (b / "beta.txt").read_text() == "beta\n"
    assert not (b / "from_alpha.txt").exists() and not (a / "from_beta.txt").exists()
    # at once: each sleeps 4 s in its sandbox; one after the other, the second would end 4 s after the first
    assert abs(end_a - end_b) < 4, (end_a, end_b)


def test_a_cwd_outside_the_served_roots_is_refused(
    tmp_path: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    served, other = make_repo(tmp_path, "served"), make_repo(tmp_path, "other")

    async def body(session: Any) -> Any:
        return await session.call_tool("kimi", {"prompt": "hi", "cwd": str(other)})

    result = asyncio.run(with_client(serve_env(env, server), served, body))
    assert result.is_error and "outside the folders this server serves" in result.content[0].text
    assert server.requests == []


def test_approvals_go_through_elicitation_and_a_no_reaches_the_model(
    tmp_path: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    from mcp.types import ElicitResult

    repo = make_repo(tmp_path, "repo")
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch ran.txt"}, "s1")]}, {"text": "refused"})
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"allow": False, "why": "use the Makefile target instead"})

    async def body(session: Any) -> dict[str, Any]:
        return payload(await session.call_tool("kimi", {"prompt": "make ran.txt", "sandbox": "none"}))

    out = asyncio.run(with_client(serve_env(env, server), repo, body, elicit=elicit))
    assert asked and "touch ran.txt" in asked[0]
    assert out["answer"] == "refused" and not (repo / "ran.txt").exists()
    sent = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert any("use the Makefile target instead" in str(c) for c in sent), sent


def test_without_elicitation_a_call_that_asks_is_refused_as_in_kimi_p(
    tmp_path: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    repo = make_repo(tmp_path, "repo")
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch ran.txt"}, "s1")]}, {"text": "could not"})

    async def body(session: Any) -> dict[str, Any]:
        return payload(await session.call_tool("kimi", {"prompt": "make ran.txt", "sandbox": "none"}))

    out = asyncio.run(with_client(serve_env(env, server), repo, body))
    assert out["answer"] == "could not" and not (repo / "ran.txt").exists()
    sent = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert any("headless run cannot ask" in str(c) for c in sent), sent


@pytest.fixture
def http_server(tmp_path: Path, env: dict[str, str], server: ScriptedModelServer) -> Any:
    repo = make_repo(tmp_path, "repo")
    port = free_port()
    proc = subprocess.Popen([*kimi_executable(), "mcp", "serve", "--http", str(port)], cwd=repo,
                            env={**serve_env(env, server), "KIMI_MCP_TOKEN": TOKEN},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
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


def test_http_refuses_a_request_without_the_token(http_server: str) -> None:
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        refused = httpx.post(http_server, json=init, headers={**accept, **headers}, timeout=10)
        assert refused.status_code == 401, refused.text
    assert httpx.get(http_server, timeout=10).status_code == 401


def test_http_with_the_token_serves_the_mcp_client(http_server: str) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    async def main() -> list[str]:
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with (
            client,
            streamable_http_client(http_server, http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            return [t.name for t in (await session.list_tools()).tools]

    assert set(asyncio.run(asyncio.wait_for(main(), 60))) == {"kimi", "kimi_reply"}


def test_http_refuses_a_token_too_short(tmp_path: Path, env: dict[str, str]) -> None:
    argv = [*kimi_executable(), "mcp", "serve", "--http", str(free_port())]
    short = {**env, "KIMI_MCP_TOKEN": "short"}
    proc = subprocess.run(argv, cwd=tmp_path, env=short, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "KIMI_MCP_TOKEN is shorter" in proc.stderr
