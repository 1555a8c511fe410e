"""`kimi acp` driven by a real ACP client (the `acp` package's client side) against the scripted server."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import acp
import pytest

from acp_support import EditorClient, RecordingClient, agent_env, node_script, run
from scripted_server import ScriptedModelServer
from support import ROOT_DIR, await_until, kimi_executable, processes_with, require, tool_call, wait_until


def test_a_prompt_streams_chunks_and_an_edit_arrives_as_a_diff(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    edit = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}
    server.add(
        {"reasoning": "the sign is wrong", "tool_calls": [tool_call("StrReplaceFile", edit, "e1")]},
        {"text": "Fixed the sign in calc.py."},
    )
    client = RecordingClient()

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("fix add")])

    response = run(repo, env, server, client, flow)
    assert response.stop_reason == "end_turn"
    kinds = client.kinds()
    assert "agent_thought_chunk" in kinds and "agent_message_chunk" in kinds and "tool_call" in kinds
    text = "".join(u.content.text for u in client.updates if u.session_update == "agent_message_chunk")
    assert text == "Fixed the sign in calc.py."
    start = next(u for u in client.updates if u.session_update == "tool_call")
    assert start.kind == "edit" and start.locations[0].path == str(repo / "calc.py")
    done = next(u for u in client.updates if u.session_update == "tool_call_update")
    diff = done.content[0]
    assert done.status == "completed" and diff.type == "diff"
    assert "a - b" in diff.old_text and "a + b" in diff.new_text
    assert (repo / "calc.py").read_text().endswith("a + b\n")


@pytest.mark.parametrize("answer", ["allow_once", "reject"])
def test_a_permission_request_answered_both_ways(
    answer: str, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch made.txt"}, "s1")]}, {"text": "ok"})
    client = RecordingClient(answer)

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="ask")
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("make a file")])

    assert run(repo, env, server, client, flow).stop_reason == "end_turn"
    assert len(client.permissions) == 1 and "touch made.txt" in client.permissions[0].title
    assert (repo / "made.txt").exists() == (answer == "allow_once")
    if answer == "reject":
        tool = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
        assert "rejected in the editor" in tool


def test_cancel_in_the_middle_of_a_slow_command_leaves_no_process(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"tool_calls": [tool_call("Shell", {"command": "sleep 97.5", "timeout": 120}, "slow")]})
    client = RecordingClient()

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("wait")]))
        await await_until(lambda: "tool_call" in client.kinds() and processes_with("sleep 97.5"), 60,
                          "the command to run")  # fmt: skip
        await conn.cancel(session_id=session.session_id)
        return await turn

    assert run(repo, env, server, client, flow).stop_reason == "cancelled"
    wait_until(lambda: processes_with("sleep 97.5") == [], what="the cancelled command to be gone")


def test_load_replays_a_finished_session_and_images_are_accepted(
    repo: Path, env: dict, server: ScriptedModelServer, png_bytes: bytes
) -> None:
    server.add({"text": "first answer"}, {"text": "I see a red square"})
    client = RecordingClient()

    async def first(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hello there")])
        image = acp.image_block(base64.b64encode(png_bytes).decode(), "image/png")
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("what is this?"), image])
        return session.session_id

    session_id = run(repo, env, server, client, first)
    parts = server.requests[1]["messages"][-1]["content"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    replay = RecordingClient()

    async def load(conn: Any, proc: Any) -> Any:
        await conn.load_session(cwd=str(repo), session_id=session_id, mcp_servers=[])

    run(repo, env, server, replay, load)
    texts = [
        u.content.text for u in replay.updates if u.session_update in ("user_message_chunk", "agent_message_chunk")
    ]
    assert texts[:2] == ["hello there", "first answer"]


def test_bad_input_gets_json_rpc_errors_and_stdin_closing_ends_the_process(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    proc = subprocess.Popen([*kimi_executable(), "acp"], cwd=repo, env=agent_env(env, server), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None

    def send(raw: str) -> dict:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((raw + "\n").encode())
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    assert send("{not json")["error"]["code"] == -32700
    assert send('{"jsonrpc":"2.0","id":1,"method":"no/such","params":{}}')["error"]["code"] == -32601
    init = send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": 1}}))
    assert init["result"]["agentCapabilities"]["loadSession"] is True
    unknown = send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                               "params": {"sessionId": "nope", "prompt": []}}))  # fmt: skip
    assert unknown["error"]["code"] == -32602
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0


def test_the_official_typescript_client_drives_a_session(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    import shutil

    root = ROOT_DIR
    sdk = root / ".ci" / "node" / "node_modules" / "@agentclientprotocol" / "sdk"
    node = shutil.which("node")
    require(
        "node and @agentclientprotocol/sdk", node is not None and sdk.is_dir(), ".ci/run installs the SDK into .ci/node"
    )
    assert node is not None
    edit = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}
    server.add(
        {"tool_calls": [tool_call("StrReplaceFile", edit, "e1")]},
        {"tool_calls": [tool_call("Shell", {"command": "grep -c 'a + b' calc.py"}, "s1")]},
        {"text": "Fixed and checked."},
    )
    exe = kimi_executable()
    script = node_script("acp_ts_client.mjs", repo.parent / "acp-client")
    proc = subprocess.run(
        [node, str(script), exe[0], str(repo), "allow_once"],
        cwd=script.parent, env=agent_env(env, server), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["protocolVersion"] == 1 and result["stopReason"] == "end_turn" and result["exitCode"] == 0
    kinds = [u["sessionUpdate"] for u in result["updates"]]
    assert "tool_call" in kinds and "agent_message_chunk" in kinds
    diffs = [c for u in result["updates"] if u["sessionUpdate"] == "tool_call_update" for c in u.get("content") or []
             if c.get("type") == "diff"]  # fmt: skip
    assert diffs and "a + b" in diffs[0]["newText"]
    assert result["permissions"] and "grep -c" in result["permissions"][0]


def test_with_an_editor_that_offers_files_reads_and_edits_go_through_it(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    edit = {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}}
    server.add(
        {"tool_calls": [tool_call("ReadFile", {"path": "calc.py"}, "r1")]},
        {"tool_calls": [tool_call("StrReplaceFile", edit, "e1")]},
        {"text": "done"},
    )
    client = EditorClient(repo)

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        return await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("fix")])

    caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))
    assert run(repo, env, server, client, flow, caps).stop_reason == "end_turn"
    read = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert "unsaved edit" in read
    assert client.writes == [(str(repo / "calc.py"), "def add(a, b):\n    return a + b  # unsaved edit\n")]
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"  # the editor owns the buffer


def test_the_early_initialize_answer_is_the_one_the_sdk_would_send() -> None:
    """`kimi acp` answers initialize before importing the SDK (kimi_cli.frontends.acp.early): the answer must be
    what KimiAcpAgent.initialize gives, serialised as the SDK does, with and without editor file access."""
    from acp.schema import ClientCapabilities

    from kimi_cli.frontends.acp import early
    from kimi_cli.frontends.acp.agent import KimiAcpAgent

    assert early.PROTOCOL_VERSION == acp.PROTOCOL_VERSION
    for caps in (None, {"fs": {"readTextFile": True, "writeTextFile": True}}, {"fs": {"readTextFile": True}}):
        params: dict[str, Any] = {"protocolVersion": 1, **({"clientCapabilities": caps} if caps else {})}
        agent = KimiAcpAgent()
        sdk_caps = ClientCapabilities.model_validate(caps) if caps else None
        result = asyncio.run(agent.initialize(protocol_version=1, client_capabilities=sdk_caps))
        assert early.initialize_result(params) == result.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude_unset=True
        )
        assert early.editor_fs(params) == agent.editor_fs
