"""Driving `kimi acp` from tests: a real ACP client (the `acp` package's client side) that records every
update and answers permission requests as told, an editor-like client that owns file buffers, and the node
scripts of the TypeScript reference client."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import acp
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from scripted_server import ScriptedModelServer
from support import ROOT_DIR, TEST_KEY, TESTS_DIR, kimi_executable


class RecordingClient:
    """Collects every session/update and answers permission requests as told."""

    def __init__(self, answer: str = "allow_once") -> None:
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.answer = answer

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        self.permissions.append(tool_call)
        outcome = DeniedOutcome(outcome="cancelled") if self.answer == "cancel" else AllowedOutcome(
            option_id=self.answer, outcome="selected")  # fmt: skip
        return RequestPermissionResponse(outcome=outcome)

    def kinds(self) -> list[str]:
        return [getattr(u, "session_update", "") for u in self.updates]


def agent_env(env: dict, server: ScriptedModelServer) -> dict:
    return {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}


async def with_agent(
    repo: Path, env: dict, server: ScriptedModelServer, client: RecordingClient, flow: Any, caps: Any = None
) -> Any:
    exe = kimi_executable()
    async with acp.spawn_agent_process(lambda _agent: client, exe[0], *exe[1:], "acp", env=agent_env(env, server),
                                       cwd=str(repo)) as (conn, proc):  # fmt: skip
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=caps)
        return await flow(conn, proc)


def run(
    repo: Path, env: dict, server: ScriptedModelServer, client: RecordingClient, flow: Any, caps: Any = None
) -> Any:
    return asyncio.run(asyncio.wait_for(with_agent(repo, env, server, client, flow, caps), 120))


class EditorClient(RecordingClient):
    """A client that offers fs/*: its buffer for calc.py is unsaved and differs from the disk."""

    def __init__(self, repo: Path) -> None:
        super().__init__()
        self.buffers = {str(repo / "calc.py"): "def add(a, b):\n    return a - b  # unsaved edit\n"}
        self.writes: list[tuple[str, str]] = []

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> Any:
        from acp.schema import ReadTextFileResponse

        if path not in self.buffers:
            raise RuntimeError("not open")
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> None:
        self.writes.append((path, content))
        self.buffers[path] = content


def node_script(name: str, folder: Path) -> Path:
    """A copy of tests/NAME in `folder`, beside a link to .ci/node's node_modules: ES modules resolve packages
    from the script's own folder, and a non-root run may not write into .ci/node."""
    sdk_modules = ROOT_DIR / ".ci" / "node" / "node_modules"
    folder.mkdir(exist_ok=True)
    if not (folder / "node_modules").exists():
        (folder / "node_modules").symlink_to(sdk_modules)
    shutil.copyfile(TESTS_DIR.joinpath(name), folder / name)
    return folder / name
