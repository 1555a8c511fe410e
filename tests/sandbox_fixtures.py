"""Fixtures for sandbox tests: a real backend (bwrap or docker) behind the real Shell tool."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kimi_cli.tools.base import ToolContext, ToolResult
from kimi_cli.tools.sandbox.bwrap import BwrapSandbox
from kimi_cli.tools.sandbox.docker_backend import DockerSandbox, docker_works
from kimi_cli.tools.sandbox.policy import build_policy
from kimi_cli.tools.shell import Shell
from kimi_cli.tools.workspace import Workspace

SECRET = "sk-sandbox-SECRET-42"


@dataclass
class Rig:
    """A workspace, a fake home with planted secrets, an outside folder, and a Shell on a backend."""

    backend: str
    ws: Path
    home: Path
    outside: Path
    shell: Shell

    def run(self, command: str, timeout: int | None = None) -> ToolResult:
        params = Shell.Params.model_validate({"command": command, "timeout": timeout})
        return asyncio.run(self.shell.run(params, ToolContext(workspace=Workspace(self.ws))))

    def call(self, name: str, args: dict) -> ToolResult:
        from kimi_cli.toolset import default_tools

        ctx = ToolContext(workspace=Workspace(self.ws))
        return asyncio.run(default_tools([self.shell]).call(name, json.dumps(args), ctx))


def docker_ready() -> tuple[bool, str]:
    ok, why = docker_works()
    if not ok:
        return False, why
    from docker_image import ensure_image

    ensure_image()
    return True, ""


def make_rig(tmp_path: Path, backend: str, network: bool = False) -> tuple[Rig, object]:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN PRIVATE KEY-----\n")
    (home / ".kimi").mkdir()
    (home / ".kimi" / "config.toml").write_text(f'api_key = "{SECRET}"\n')
    outside = tmp_path / "outside"
    outside.mkdir()
    private_tmp = tmp_path / "private-tmp"
    private_tmp.mkdir()
    environ = {
        **os.environ,
        "HOME": str(home),
        "KIMI_API_KEY": SECRET,
        "GITHUB_TOKEN": SECRET,
        "DB_PASSWORD": SECRET,
        "AWS_SECRET_ACCESS_KEY": SECRET,
    }
    policy = build_policy(ws, private_tmp, network=network, environ=environ)
    if backend == "bwrap":
        sandbox: object = BwrapSandbox(policy, 30_000)
    elif backend == "landlock":
        from kimi_cli.tools.sandbox.landlock import LandlockSandbox

        sandbox = LandlockSandbox(policy, 30_000)
    else:
        ok, why = docker_ready()
        from conftest import require

        require("docker", ok, f"the docker backend is not tested: {why}")
        from docker_image import IMAGE

        sandbox = DockerSandbox(policy, 30_000, IMAGE, "512m", 256, session="test")
    return Rig(backend, ws, home, outside, Shell(sandbox)), sandbox  # type: ignore[arg-type]


BACKENDS = ["bwrap", "landlock", "docker"]


def backends() -> list[str]:
    """All of them; KIMI_TEST_BACKENDS narrows the list (the non-root CI run, where bwrap cannot work)."""
    wanted = os.environ.get("KIMI_TEST_BACKENDS")
    return [b for b in BACKENDS if b in wanted.split(",")] if wanted else BACKENDS


@pytest.fixture(params=backends())
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    the_rig, sandbox = make_rig(tmp_path, request.param)
    yield the_rig
    close = getattr(sandbox, "close_sync", None)
    if close is not None:
        close()


@pytest.fixture(params=backends())
def net_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    the_rig, sandbox = make_rig(tmp_path, request.param, network=True)
    yield the_rig
    close = getattr(sandbox, "close_sync", None)
    if close is not None:
        close()


class CountingServer:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()
