"""Helpers for the language-server tests: a workspace, a fake home with planted secrets, a real sandbox backend
and the session's LspManager on one event loop, driven the way the agent's call path drives it."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support import ROOT_DIR, TESTS_DIR, require

NODE_BIN = ROOT_DIR / ".ci" / "node" / "node_modules" / ".bin"  # typescript-language-server, from .ci/run
FAKE_SERVER = TESTS_DIR / "lsp_fake_server.py"
SECRET = "s3cr3t-LSP-TOKEN-7781"
LSP_BACKENDS = ("bwrap", "landlock")


def lsp_backends() -> list[str]:
    """bwrap and landlock (the backends that run language servers), as KIMI_TEST_BACKENDS narrows them."""
    wanted = os.environ.get("KIMI_TEST_BACKENDS")
    return [b for b in LSP_BACKENDS if not wanted or b in wanted.split(",")]


def with_node_servers() -> None:
    """Put .ci/node's servers on this process's PATH (where a user's `npm i -g` would put them)."""
    if str(NODE_BIN) not in os.environ.get("PATH", ""):
        os.environ["PATH"] = f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"


def need(program: str) -> None:
    from kimi_cli.hostsafe.programs import host_which

    if program == "typescript-language-server":
        with_node_servers()
    how = {"typescript-language-server": "npm install --prefix .ci/node typescript-language-server typescript",
           "basedpyright-langserver": "pip install basedpyright"}.get(program, program)  # fmt: skip
    require(program, host_which(program) is not None, how)


@dataclass
class LspRig:
    backend: str
    ws: Path
    home: Path
    sandbox: Any
    manager: Any
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)

    def run(self, coro: Any, timeout: float = 120) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    def read(self, rel: str) -> None:
        """What a ReadFile of `rel` does: its servers start and open it, in the background."""
        from kimi_cli.tools.base import READS, ToolResult

        self.run(self.manager.after_call(READS.reading(rel), ToolResult("read")))

    def write(self, rel: str, text: str) -> tuple[str, float]:
        """A WriteFile of `rel`: the file written, then the post-call hook; (what it appended, seconds)."""
        from kimi_cli.tools.base import ToolFacts, ToolResult
        from kimi_cli.tools.write_file import diff_display

        path = self.ws / rel
        old = path.read_text() if path.exists() else None
        path.write_text(text)
        result = ToolResult(f"wrote {rel}", display=diff_display(rel, old, text))
        began = time.monotonic()
        self.run(self.manager.after_call(ToolFacts(writes=True).writing(rel), result))
        return result.output.removeprefix(f"wrote {rel}").strip(), time.monotonic() - began

    def command_changed(self) -> str:
        """The hook after a Shell call (files it cannot name): what it appended."""
        from kimi_cli.tools.base import ToolFacts, ToolResult

        result = ToolResult("exit code: 0")
        self.run(self.manager.after_call(ToolFacts(reads=True, writes=True, commands=True), result))
        return result.output.removeprefix("exit code: 0").strip()

    def wait_running(self, name: str, timeout: float = 60) -> None:
        async def ready() -> bool:
            for _ in range(int(timeout * 50)):  # the read's background task makes the server first
                if name in self.manager.servers:
                    break
                await asyncio.sleep(0.02)
            server = self.manager.servers.get(name)
            return server is not None and await server.ready(timeout)

        assert self.run(ready(), timeout + 5), self.manager.servers.get(name) and self.manager.servers[name].status()
        self.settle(timeout)

    def settle(self, timeout: float = 60) -> None:
        """The files read so far have had their first check (as when the model reads, then thinks)."""
        tasks = list(self.manager._baselines.values())
        if tasks:
            self.run(asyncio.wait(tasks, timeout=timeout), timeout + 5)

    def close(self) -> None:
        self.run(self.manager.aclose(), 30)
        self.run(self.sandbox.close(), 30)
        self.loop.close()


def make_lsp_rig(tmp_path: Path, backend: str, pins: dict[str, str] | None = None, **settings: Any) -> LspRig:
    """A rig on `backend` (bwrap, landlock or none) with [lsp] `settings`; the fake home holds SECRET in its
    hidden ~/.aws and ~/.kimi (a pyrightconfig or tsconfig may point there)."""
    from kimi_cli.config import LspSettings
    from kimi_cli.extensions.lsp.manager import LspManager
    from kimi_cli.sandbox.policy import build_policy

    ws, home, private_tmp = tmp_path / "ws", tmp_path / "home", tmp_path / "private-tmp"
    for folder in (ws, home / ".aws", home / ".kimi", private_tmp):
        folder.mkdir(parents=True, exist_ok=True)
    (home / ".aws" / "secret_mod.py").write_text(f'TOKEN = "{SECRET}"\n')
    (home / ".aws" / "secret.ts").write_text(f'export const TOKEN = "{SECRET}" as const;\n')
    policy = build_policy(ws, private_tmp, environ={**os.environ, "HOME": str(home)})
    if backend == "bwrap":
        from kimi_cli.sandbox.backends.bwrap import BwrapSandbox, bwrap_works

        ok, why = bwrap_works(policy)
        require("bwrap", ok, why)
        sandbox: Any = BwrapSandbox(policy, 30_000)
    elif backend == "landlock":
        from kimi_cli.sandbox.backends.landlock.backend import LandlockSandbox

        sandbox = LandlockSandbox(policy, 30_000)
    else:
        from kimi_cli.sandbox.backends.none import NoSandbox

        sandbox = NoSandbox(policy, 30_000)
    values = {"start_timeout": 30.0, **settings}
    manager = LspManager(ws, LspSettings.model_validate(values), sandbox, private_tmp, pins)
    rig = LspRig(backend, ws.resolve(), home, sandbox, manager)
    from kimi_cli.extensions.lsp import protocol

    rig.run(protocol.load())  # kimi's own one-time import (~0.5 s), outside what the tests time
    return rig


def fake_server(mode: str, marks: Path | None = None) -> dict[str, Any]:
    """[lsp] settings that make the fake server the only Python server."""
    command = [sys.executable, str(FAKE_SERVER), mode] + ([str(marks)] if marks is not None else [])
    return {"languages": {"python": ["fake"]}, "servers": {"fake": {"command": command, "languages": ["python"]}}}
