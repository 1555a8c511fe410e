"""`kimi mcp serve`: the client names each task's folder, so a client (or a model upstream of it, prompt-
injected) could aim kimi at any folder on the machine. A cwd outside the served roots is refused: absolute,
relative with `..`, or through a link inside the root that points out; beside it, a subfolder of the root
is served. And the client cannot grant trust: an untrusted workspace's `yolo = true` does not apply through
MCP, as it does not in `kimi -p`, while the same folder once trusted (`kimi trust`) gets it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcp_serve_support import make_repo, payload, serve_env, with_client

from scripted_server import ScriptedModelServer
from support import tool_call, trust_folder


def test_a_cwd_outside_the_served_roots_is_refused(
    tmp_path: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    served, other = make_repo(tmp_path, "served"), make_repo(tmp_path, "other")
    (served / "out").symlink_to(other)
    (served / "sub").mkdir()
    server.add({"text": "in sub"})

    async def body(session: Any) -> tuple[list[Any], dict[str, Any]]:
        refused = [await session.call_tool("kimi", {"prompt": "hi", "cwd": cwd})
                   for cwd in (str(other), "../other", str(served / "out"), "/")]  # fmt: skip
        inside = payload(await session.call_tool("kimi", {"prompt": "hi", "cwd": "sub"}))
        return refused, inside

    refused, inside = asyncio.run(with_client(serve_env(env, server), served, body))
    for result in refused:
        assert result.is_error and "outside the folders this server serves" in result.content[0].text
    assert inside["answer"] == "in sub" and inside["cwd"] == str(served / "sub")
    assert len(server.requests) == 1


def run_shell(env: dict[str, str], server: ScriptedModelServer, repo: Path) -> dict[str, Any]:
    server.add({"tool_calls": [tool_call("Shell", {"command": "touch ran.txt"}, "s1")]}, {"text": "over"})

    async def body(session: Any) -> dict[str, Any]:
        return payload(await session.call_tool("kimi", {"prompt": "make ran.txt", "sandbox": "none"}))

    return asyncio.run(with_client(serve_env(env, server), repo, body))  # type: ignore[no-any-return]


def test_an_untrusted_workspaces_yolo_does_not_apply_through_mcp(
    tmp_path: Path, home: Path, env: dict[str, str], server: ScriptedModelServer
) -> None:
    repo = make_repo(tmp_path, "repo")
    (repo / ".kimi").mkdir()
    (repo / ".kimi" / "config.toml").write_text("yolo = true\n")
    run_shell(env, server, repo)
    assert not (repo / "ran.txt").exists()  # refused: a headless run cannot ask, and yolo was not the user's
    trust_folder(repo, home)
    run_shell(env, server, repo)
    assert (repo / "ran.txt").exists()  # the user trusted the folder: its yolo applies
