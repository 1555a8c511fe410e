"""Fixtures for sandbox tests: a real backend (bwrap, landlock or docker) behind the real Shell tool.

The rig keeps one event loop for its lifetime, so a background task started by one call is still running
(and still supervised) at the next, as in a session. `probe` is a static helper compiled from
sandbox_probe.c and copied into the workspace: the same attack runs on every backend (the Docker test
image has no Python).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kimi_cli.sandbox.backends.bwrap import BwrapSandbox
from kimi_cli.sandbox.backends.docker import DockerSandbox, docker_works
from kimi_cli.sandbox.policy import build_policy
from kimi_cli.tools.background import TaskManager
from kimi_cli.tools.base import ToolContext, ToolResult
from kimi_cli.tools.shell import Shell
from kimi_cli.tools.workspace import Workspace

SECRET = "sk-sandbox-SECRET-42"
HELPER = Path(__file__).with_name("sandbox_probe.c")


@dataclass
class Rig:
    """A workspace, a fake home with planted secrets, an outside folder, and a Shell on a backend."""

    backend: str
    ws: Path
    home: Path
    outside: Path
    shell: Shell
    sandbox: object = None
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)

    def run(self, command: str, timeout: int | None = None) -> ToolResult:
        params = Shell.Params.model_validate({"command": command, "timeout": timeout})
        return self.loop.run_until_complete(self.shell.run(params, ToolContext(workspace=Workspace(self.ws))))

    def call(self, name: str, args: dict) -> ToolResult:
        from kimi_cli.agent.toolbox import default_tools

        ctx = ToolContext(workspace=Workspace(self.ws))
        return self.loop.run_until_complete(default_tools([self.shell]).call(name, json.dumps(args), ctx))

    def background(self, command: str) -> str:
        """Start a background task (Shell with background: true); its task id."""
        params = Shell.Params.model_validate({"command": command, "background": True})
        result = self.loop.run_until_complete(self.shell.run(params, ToolContext(workspace=Workspace(self.ws))))
        assert result.output.startswith("task_id: "), result.output
        return result.output.split()[1]

    def task_output(self, task_id: str) -> str:
        assert self.shell.tasks is not None
        self.loop.run_until_complete(asyncio.sleep(0))  # let the pump read what is there
        return self.shell.tasks.read(task_id, None)

    def wait_task(self, task_id: str, timeout: float = 20) -> str:
        """Run the loop until the task has finished; its output."""
        assert self.shell.tasks is not None
        task = self.shell.tasks.get(task_id)

        async def done() -> None:
            if task.reader is not None:
                await asyncio.wait_for(asyncio.shield(task.reader), timeout)

        self.loop.run_until_complete(done())
        return self.shell.tasks.read(task_id, None)

    def close(self) -> None:
        if self.shell.tasks is not None:
            self.loop.run_until_complete(self.shell.tasks.close())
        close = getattr(self.sandbox, "close_sync", None)
        if close is not None:
            close()
        self.loop.close()


@functools.lru_cache(maxsize=1)
def probe_binary() -> Path | None:
    """The helper, compiled once per test run (static, so it runs in the busybox image too)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    out = Path(tempfile.mkdtemp(prefix="kimi-probe-")) / "probe"
    built = subprocess.run([cc, "-static", "-O1", "-o", str(out), str(HELPER)], capture_output=True, text=True)
    if built.returncode != 0:  # no static libc: a dynamic one still serves bwrap and landlock
        built = subprocess.run([cc, "-O1", "-o", str(out), str(HELPER)], capture_output=True, text=True)
    return out if built.returncode == 0 else None


def docker_ready() -> tuple[bool, str]:
    ok, why = docker_works()
    if not ok:
        return False, why
    from docker_image import ensure_image

    ensure_image()
    return True, ""


def make_rig(
    tmp_path: Path,
    backend: str,
    network: bool = False,
    environ: dict[str, str] | None = None,
    env_allow: list[str] | None = None,
    env_deny: list[str] | None = None,
    prepare: Callable[[Path], None] | None = None,
) -> tuple[Rig, object]:
    """`prepare(ws)` runs before the sandbox is built: what the workspace holds when a session starts."""
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    if prepare is not None:
        prepare(ws)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN PRIVATE KEY-----\n")
    (home / ".kimi").mkdir()
    (home / ".kimi" / "config.toml").write_text(f'api_key = "{SECRET}"\n')
    outside = tmp_path / "outside"
    outside.mkdir()
    private_tmp = tmp_path / "private-tmp"
    private_tmp.mkdir()
    full_environ = {
        **os.environ,
        "HOME": str(home),
        "KIMI_API_KEY": SECRET,
        "GITHUB_TOKEN": SECRET,
        "DB_PASSWORD": SECRET,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        **(environ or {}),
    }
    probe = probe_binary()
    if probe is not None:
        shutil.copy2(probe, ws / "probe")
    policy = build_policy(ws, private_tmp, network=network, environ=full_environ, env_allow=env_allow,
                          env_deny=env_deny)  # fmt: skip
    if backend == "bwrap":
        sandbox: object = BwrapSandbox(policy, 30_000)
    elif backend == "landlock":
        from kimi_cli.sandbox.backends.landlock.backend import LandlockSandbox

        sandbox = LandlockSandbox(policy, 30_000)
    else:
        ok, why = docker_ready()
        from support import require

        require("docker", ok, f"the docker backend is not tested: {why}")
        from docker_image import IMAGE

        sandbox = DockerSandbox(policy, 30_000, IMAGE, "512m", 256, session="test")
    tasks = TaskManager(sandbox, str(ws)) if hasattr(sandbox, "spawn_spec") else None  # type: ignore[arg-type]
    shell = Shell(sandbox, tasks=tasks)  # type: ignore[arg-type]
    return Rig(backend, ws, home, outside, shell, sandbox), sandbox


def local_shell(tmp_path: Path, ws: Path, backend: str) -> Shell:
    """The Shell tool on a bwrap or landlock sandbox of `ws` (the default policy, a private /tmp under tmp_path):
    what a session's commands run in, for the attacks that plant something with a command."""
    from kimi_cli.sandbox.backends.landlock.backend import LandlockSandbox

    private_tmp = tmp_path / "private-tmp"
    private_tmp.mkdir(exist_ok=True)
    policy = build_policy(ws, private_tmp)
    return Shell(BwrapSandbox(policy, 30_000) if backend == "bwrap" else LandlockSandbox(policy, 30_000))


BACKENDS = ["bwrap", "landlock", "docker"]


def backends() -> list[str]:
    """All of them; KIMI_TEST_BACKENDS narrows the list (the non-root CI run, where bwrap cannot work)."""
    wanted = os.environ.get("KIMI_TEST_BACKENDS")
    return [b for b in BACKENDS if b in wanted.split(",")] if wanted else BACKENDS


@pytest.fixture(params=backends())
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    the_rig, _ = make_rig(tmp_path, request.param)
    yield the_rig
    the_rig.close()


@pytest.fixture(params=backends())
def net_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    the_rig, _ = make_rig(tmp_path, request.param, network=True)
    yield the_rig
    the_rig.close()


def need_probe(rig: Rig) -> str:
    """The helper's path in the workspace, or a skip (no C compiler here)."""
    if not (rig.ws / "probe").exists():
        from support import require

        require("cc", False, "a C compiler builds the sandbox probe (tests/sandbox_probe.c)")
    return "./probe"


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


class UnixServer:
    """A unix socket listener on the host that answers every client with `reply` and counts them: the
    stand-in for docker.sock, an ssh-agent or a D-Bus bus. Abstract when `path` starts with '@'."""

    def __init__(self, path: str, reply: bytes = b"outside") -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind("\0" + path[1:] if path.startswith("@") else path)
        if not path.startswith("@"):
            os.chmod(path, 0o777)  # DAC is not what keeps a command out
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.reply = reply
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
            with contextlib.suppress(OSError):
                conn.sendall(self.reply)
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


def sandbox_flags(backend: str, home: Path) -> list[str]:
    """`kimi`'s flags for `backend`; for docker, the test image in the test HOME's config (or fail/skip
    when docker is not usable here)."""
    if backend == "docker":
        from support import require

        ok, why = docker_ready()
        require("docker", ok, f"the docker backend is not tested: {why}")
        from docker_image import IMAGE

        with (home / ".kimi" / "config.toml").open("a") as fh:
            fh.write(f'\n[sandbox]\ndocker_image = "{IMAGE}"\n')
    return ["--sandbox", backend]


def kimi_containers(pid: int) -> list[str]:
    """The Docker containers (any state) that the kimi process `pid` started."""
    out = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=kimi.pid={pid}"], capture_output=True, text=True)
    return out.stdout.split()
