"""ACP's edit diffs read nothing by path: a model-named FIFO, /dev/stdin or a swapped link cannot freeze
`kimi acp` or carry a host file to the editor.

The finding: for every WriteFile and StrReplaceFile, the ACP front end opened the path the model named with a
plain open() on the event loop, when the call started and again when it ended, before the tool checked
anything. A FIFO froze the agent for good (session/cancel and session/set_mode went unanswered, stdin EOF did
not end it); `/dev/stdin` swallowed the editor's next JSON-RPC messages; a file swapped with a link to
`~/.ssh/id_rsa` by a background command put the key into the diff sent to the editor. Now the diff is made
from the very texts the tool read and wrote through the no-follow reader (tools.write_file.diff_display),
and the front end reads nothing. Driven by the official TypeScript client; beside them, an ordinary edit
arrives with its exact diff.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from swapper import start_swapper, stop_swapper

from acp_support import node_script
from scripted_server import ScriptedModelServer
from support import ROOT_DIR, TEST_KEY, kimi_executable, require, tool_call

ROOT = ROOT_DIR
CANARY = "CANARY-PRIVATE-KEY-5f1d3c"  # stands for ~/.ssh/id_rsa: a host file outside the workspace
SLOW = "sleep 97.25"


def scenario(repo: Path, env: dict, server: ScriptedModelServer, **steps: Any) -> dict[str, Any]:
    """Run tests/acp_ts_scenario.mjs (the official client) against `kimi acp` in `repo`."""
    node = shutil.which("node")
    sdk = ROOT / ".ci" / "node" / "node_modules" / "@agentclientprotocol" / "sdk"
    require("node and @agentclientprotocol/sdk", node is not None and sdk.is_dir(), ".ci/run installs it in .ci/node")
    assert node is not None
    script = node_script("acp_ts_scenario.mjs", repo.parent / "acp-client")
    agent_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    proc = subprocess.run([node, str(script), kimi_executable()[0], str(repo), json.dumps(steps)],
                          cwd=script.parent, env=agent_env, capture_output=True, text=True, timeout=180)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def still_answers(server: ScriptedModelServer) -> dict[str, Any]:
    """The steps after the attack: a mode change, then a slow command that session/cancel stops."""
    server.add({"tool_calls": [tool_call("Shell", {"command": SLOW, "timeout": 120}, "slow")]}, {"text": "late"})
    return {"setMode": "ask", "cancelPrompt": "wait", "timeoutMs": 20000}


def diffs(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for u in result["updates"] if u.get("sessionUpdate") == "tool_call_update"
            for c in u.get("content") or [] if c.get("type") == "diff"]  # fmt: skip


def test_a_write_to_a_fifo_leaves_the_agent_answering(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    os.mkfifo(repo / "pipe1")  # as `mkfifo pipe1` from an earlier command
    server.add(
        {"tool_calls": [tool_call("WriteFile", {"path": "pipe1", "content": "x\n"}, "w1")]},
        {"tool_calls": [tool_call("StrReplaceFile", {"path": "pipe1", "edit": {"old": "a", "new": "b"}}, "e1")]},
        {"text": "tried"},
    )
    result = scenario(repo, env, server, prompts=["write it"], **still_answers(server))
    assert result["prompts"] == ["end_turn"]
    assert result["setMode"] == "answered" and result["cancelled"] == "cancelled"
    assert result["exitedOnEof"] is True
    assert diffs(result) == []


def test_dev_stdin_as_a_path_swallows_no_message(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    """Through pipes, as the Python SDK's client spawns the agent (Node's client gives it sockets, which
    /dev/stdin cannot reopen): the editor's requests after the call must all be read and answered."""
    import asyncio

    import acp

    from acp_support import RecordingClient, run
    from support import processes_with

    server.add(
        {"tool_calls": [tool_call("WriteFile", {"path": "/dev/stdin", "content": "x"}, "w1"),
                        tool_call("StrReplaceFile", {"path": "/dev/stdin", "edit": {"old": "a", "new": "b"}}, "e1"),
                        tool_call("WriteFile", {"path": "/proc/self/fd/0", "content": "x"}, "w2")]},
        {"text": "tried"},
        {"tool_calls": [tool_call("Shell", {"command": SLOW, "timeout": 120}, "slow")]},
    )  # fmt: skip
    client = RecordingClient()

    async def flow(conn: Any, proc: Any) -> Any:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        sid = session.session_id
        first = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[acp.text_block("write")]), 30)
        await asyncio.wait_for(conn.set_session_mode(session_id=sid, mode_id="auto"), 15)  # read and answered
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[acp.text_block("wait")]))
        for _ in range(600):
            if processes_with(SLOW):
                break
            await asyncio.sleep(0.05)
        await conn.cancel(session_id=sid)
        return first.stop_reason, (await asyncio.wait_for(turn, 15)).stop_reason

    assert run(repo, env, server, client, flow) == ("end_turn", "cancelled")
    assert not any(getattr(c, "type", "") == "diff" for u in client.updates for c in getattr(u, "content", None) or [])


def test_a_file_swapped_with_a_link_to_a_secret_never_reaches_the_editor(
    repo: Path, tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    outside = tmp_path / "home-ssh"
    outside.mkdir()
    (outside / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{CANARY}\n")
    (repo / "notes.txt").write_text("notes 0\n")
    (repo / "notes.link").symlink_to(outside / "id_rsa")
    written = {f"notes {n}\n" for n in range(1, 41)}
    calls = [tool_call("WriteFile", {"path": "notes.txt", "content": f"notes {n}\n"}, f"w{n}") for n in range(1, 41)]
    server.add(*({"tool_calls": calls[i : i + 4]} for i in range(0, 40, 4)), {"text": "written"})
    swapper = start_swapper(repo / "notes.txt", repo / "notes.link")  # as a background command would
    try:
        result = scenario(repo, env, server, prompts=["write notes"], timeoutMs=60000)
    finally:
        stop_swapper(swapper, repo / "notes.txt", repo / "notes.link")
    assert result["prompts"] == ["end_turn"]
    assert CANARY not in result["raw"]  # in no message to the editor: updates, titles, permissions
    shown = diffs(result)
    assert shown, "some writes got through between swaps and came back as diffs"
    for diff in shown:  # each is what that write wrote, over what it replaced
        assert diff["newText"] in written and (diff.get("oldText") in written | {"notes 0\n", None})
    assert CANARY in (outside / "id_rsa").read_text()  # nor was it written over


def test_an_ordinary_edit_arrives_with_its_exact_diff(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    before = (repo / "calc.py").read_text()
    server.add(
        {"tool_calls": [tool_call("StrReplaceFile", {"path": "calc.py", "edit": {"old": "a - b", "new": "a + b"}},
                                  "e1"),
                        tool_call("WriteFile", {"path": "new.txt", "content": "fresh\n"}, "w1")]},
        {"text": "done"},
    )  # fmt: skip
    result = scenario(repo, env, server, prompts=["fix it"])
    assert result["prompts"] == ["end_turn"]
    by_path = {d["path"]: d for d in diffs(result)}
    edit = by_path[str(repo / "calc.py")]
    assert edit["oldText"] == before and edit["newText"] == before.replace("a - b", "a + b")
    assert edit["newText"] == (repo / "calc.py").read_text()
    created = by_path[str(repo / "new.txt")]
    assert created["newText"] == "fresh\n" and created.get("oldText") is None


@pytest.mark.parametrize("size", [10, 300_000])
def test_a_diff_is_sent_only_for_texts_within_the_bound(
    size: int, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    """Texts past 200,000 characters are not carried whole: the card says what was written instead."""
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "big.txt", "content": "y" * size}, "w1")]},
               {"text": "done"})  # fmt: skip
    result = scenario(repo, env, server, prompts=["write"])
    assert result["prompts"] == ["end_turn"]
    assert bool(diffs(result)) == (size == 10)
    assert (repo / "big.txt").read_text() == "y" * size
