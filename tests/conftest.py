"""Shared fixtures: an isolated HOME, a scripted model server on loopback, temp git repos, and `kimi`."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# Test files that import another's helpers by module name (to be moved into support modules):
sys.path.extend(str(p) for p in [*Path(__file__).parent.glob("[ei]*/"), *Path(__file__).parent.glob("attacks/*/")])
from scripted_server import ScriptedModelServer
from support import in_ci, require, wait_until  # noqa: F401  (the suite's helpers, importable from conftest)

TEST_KEY = "sk-test-SECRET-0123456789abcdef"


def kimi_executable() -> list[str]:
    """The installed `kimi` console script beside this interpreter (not a shell shim)."""
    candidate = Path(sys.executable).parent / "kimi"
    if candidate.exists():
        return [str(candidate)]
    found = shutil.which("kimi")
    return [found] if found else [sys.executable, "-m", "kimi_cli"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".kimi").mkdir(parents=True)
    (home / ".kimi" / "config.toml").write_text("[retry]\nbase_delay = 0.01\nmax_delay = 0.05\n")
    return home


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH")}
    keep.update({"HOME": str(home), "NO_COLOR": "1", "GIT_CONFIG_NOSYSTEM": "1"})
    return keep


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    srv = ScriptedModelServer().start()
    yield srv
    srv.stop()


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    out = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env)
    return out.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# calc\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return root


def trust_folder(folder: Path, home: Path | None = None) -> None:
    """What `kimi trust FOLDER` does, for the test HOME (default: the `home` fixture beside `folder`): the
    folder's current .kimi settings apply. Call it after the last write to the folder's .kimi files."""
    from kimi_cli.hostsafe import trust

    old = os.environ.get("KIMI_HOME")
    os.environ["KIMI_HOME"] = str((home or folder.parent / "home") / ".kimi")
    try:
        trust.remember(trust.assess(folder))
    finally:
        if old is None:
            os.environ.pop("KIMI_HOME", None)
        else:
            os.environ["KIMI_HOME"] = old


def run_kimi(
    args: list[str],
    cwd: Path,
    env: dict[str, str],
    server: ScriptedModelServer | None = None,
    input: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    full_env = dict(env)
    if server is not None:
        full_env.setdefault("KIMI_PROVIDER", "openai")
        full_env.setdefault("KIMI_BASE_URL", server.base_url)
        full_env.setdefault("KIMI_API_KEY", TEST_KEY)
    return subprocess.run(
        [*kimi_executable(), *args],
        cwd=cwd,
        env=full_env,
        input=input if input is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


PEAK_RSS_RUNNER = (
    "import os, subprocess, sys\n"
    "proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, "
    "stderr=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(proc.pid, 0)\n"
    "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n"
)


def run_for_peak_rss(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> tuple[int, int]:
    """(exit code, peak RSS in KiB) of argv, forked from a small Python: a fork from pytest itself would
    count pytest's own pages in the child's peak until exec."""
    out = subprocess.run(
        [sys.executable, "-c", PEAK_RSS_RUNNER, *argv], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout, check=True,
    )  # fmt: skip
    code, rss = out.stdout.split()
    return int(code), int(rss)


def result_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines, f"no stdout; stderr was:\n{proc.stderr}"
    return json.loads(lines[-1])


def call_tool(root: Path, name: str, args: dict[str, Any]) -> tuple[str, bool]:
    """Run one tool of the default set in-process on a real folder: (output, is_error)."""
    import asyncio

    from kimi_cli.agent.toolset import default_tools
    from kimi_cli.tools.base import ToolContext
    from kimi_cli.tools.workspace import Workspace

    result = asyncio.run(default_tools().call(name, json.dumps(args), ToolContext(workspace=Workspace(root))))
    return result.output, result.is_error


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    return {
        "id": call_id or f"{name}:{abs(hash(json.dumps(arguments, sort_keys=True))) % 1000}",
        "name": name,
        "arguments": arguments,
    }


def tool_results(server: ScriptedModelServer, request: int) -> list[str]:
    """The tool messages the model was sent in request number `request`."""
    return [m["content"] for m in server.requests[request]["messages"] if m["role"] == "tool"]


def free_port() -> int:
    """A loopback port nobody holds right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose command line contains `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry.name))
    return found


from sandbox_fixtures import net_rig, rig  # noqa: E402, F401  (fixtures shared by the sandbox tests)


@pytest.fixture
def png_bytes() -> bytes:
    """A real 2x2 PNG, made with zlib so no imaging library is needed."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    ihdr = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
