"""Helpers every test may use: starting `kimi` against the scripted server and reading what it did, git,
waiting for something to happen (never a fixed sleep), and what to do when a needed tool is missing.

Fixtures live in conftest.py; helpers shared by the tests of one subject live in their own support module
beside this one (acp_support, sandbox_fixtures, seccomp_bpf, terminal, ...). A test file never imports
another test file.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    from scripted_server import ScriptedModelServer

T = TypeVar("T")

TESTS_DIR = Path(__file__).resolve().parent  # tests/: fixtures, scripted servers, node scripts
ROOT_DIR = TESTS_DIR.parent  # the checkout

TEST_KEY = "sk-test-SECRET-0123456789abcdef"


def kimi_executable() -> list[str]:
    """The installed `kimi` console script beside this interpreter (not a shell shim)."""
    candidate = Path(sys.executable).parent / "kimi"
    if candidate.exists():
        return [str(candidate)]
    found = shutil.which("kimi")
    return [found] if found else [sys.executable, "-m", "kimi_cli"]


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


def plain_git(root: Path, *args: str) -> None:
    """Git as a user would run it by hand (the user's own environment, no GIT_* of the test's): the control
    that proves a plant in a repository works before a test shows that kimi's path does not run it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    for role in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{role}_NAME"], env[f"GIT_{role}_EMAIL"] = "Test", "t@example.com"
    subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, timeout=60)


def marker_script(folder: Path, marks: Path, name: str) -> Path:
    """An executable that records `name` in `marks` and passes stdin through (so filters still 'work')."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"plant-{name}"
    script.write_text(f'#!/bin/sh\necho "{name}" >> {marks}\ncat\n')
    script.chmod(0o755)
    return script


def plain_folder(tmp_path: Path) -> Path:
    """A folder with one file and no repository: where a command's `git init` plants what runs later."""
    root = tmp_path / "plain"
    root.mkdir()
    (root / "notes.txt").write_text("one\n")
    return root


def ran(marks: Path) -> list[str]:
    """The names of the marker scripts that ran (in order), from their marker file."""
    return marks.read_text().split() if marks.exists() else []


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


def folder_server_home(home: Path, name: str) -> Path:
    """The state folder (its $HOME) of a server a folder's own .kimi/mcp.json names: ~/.kimi/mcp/<name>.folder-<digest
    of the workspace> (kimi_cli.extensions.mcp.sandboxed.folder_state_name); a path that does not exist when none has
    been made yet."""
    made = sorted((home / ".kimi" / "mcp").glob(f"{name}.folder-*"))
    return made[0] if made else home / ".kimi" / "mcp" / f"{name}.folder-(none)"


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

    from kimi_cli.agent.toolbox import default_tools
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


def unique_seconds() -> int:
    """A `sleep` duration (3,600 to 7,196 s, a multiple of 4) that no other test, worker or run on this machine
    is likely to start at the same time: processes_with(f"sleep {n}") then finds this test's processes only."""
    import secrets

    return 3600 + secrets.randbelow(900) * 4


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


def session_log(home: Path, repo: Path, session_id: str) -> bytes:
    """The raw context.jsonl of session `session_id` of `repo`, under the test HOME `home`."""
    old = os.environ.get("KIMI_HOME")
    os.environ["KIMI_HOME"] = str(home / ".kimi")
    try:
        from kimi_cli.util.paths import sessions_dir

        return (sessions_dir(repo) / session_id / "context.jsonl").read_bytes()
    finally:
        if old is None:
            os.environ.pop("KIMI_HOME")
        else:
            os.environ["KIMI_HOME"] = old


def wait_until(predicate: Callable[[], T], timeout: float = 15.0, what: str = "", interval: float = 0.02) -> T:
    """Poll `predicate` until it returns something truthy, and return that; fail the test at `timeout`.
    The one way tests wait for something to happen: never a fixed sleep followed by an assertion."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what or getattr(predicate, '__name__', 'it')}")
        time.sleep(interval)


async def await_until(predicate: Callable[[], T], timeout: float = 15.0, what: str = "", interval: float = 0.02) -> T:
    """wait_until for a test's own event loop: polls without blocking the loop, so what it waits for can run."""
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what or getattr(predicate, '__name__', 'it')}")
        await asyncio.sleep(interval)


def in_ci() -> bool:
    """CI=true (set by .ci/run, and by GitHub Actions and most CI services)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require(tool: str, available: object, how: str) -> None:
    """A test that needs `tool` (node, llama-server, vLLM, docker, ...): when it is missing, skip with the reason
    on a developer's machine, and fail in CI, where .ci/run installs it, unless .ci/run lists it in
    KIMI_CI_WITHOUT (tools CI deliberately runs without, such as the 9 GB vLLM)."""
    if available:
        return
    message = f"{tool} is not available: {how}"
    waived = {t.strip().lower() for t in os.environ.get("KIMI_CI_WITHOUT", "").split(",") if t.strip()}
    if in_ci() and tool.lower() not in waived:
        pytest.fail(f"{message} (CI=true: a missing tool is a failure)")
    pytest.skip(message)
