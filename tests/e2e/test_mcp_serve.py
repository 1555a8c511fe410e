"""`kimi mcp serve` driven by the official MCP Python SDK's client against the scripted model: its tools, a
task's answer, changed files, cost and session (with progress notifications), kimi_reply continuing it, two
tasks in two workspaces running at once each confined to its own, approvals (elicitation's no reaches the
model; a client without elicitation gets kimi -p's refusal). The bearer token, the served roots and trust:
tests/attacks/mcp/test_serve_*.py."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_serve_support import make_repo, payload, serve_env, with_client
from sandbox_fixtures import backends, sandbox_flags

from scripted_server import ScriptedModelServer
from support import tool_call


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
