"""Every kimi command survives a closed stdout (`kimi undo --list | head -3`): no traceback, no 'Exception
ignored', an ordinary exit code. The test walks the Typer app's commands, so a new command is covered too."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import kimi_executable, run_kimi, tool_call


def all_commands() -> list[list[str]]:
    import typer

    from kimi_cli.cli.main import app

    found: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:  # Typer's own click: a group has .commands
        found.append(path)
        if isinstance(getattr(command, "commands", None), dict):
            for name, sub in sorted(command.commands.items()):  # type: ignore[attr-defined]
                walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


# The listings and reports each command prints when it has something to say (besides --help).
LISTINGS = [["undo", "--list"], ["pack"], ["pack", "--json"], ["doctor"], ["doctor", "--json"], ["worktree", "list"],
            ["mcp", "list"], ["sessions"], ["--help"], ["--version"], ["-V"]]  # fmt: skip


def closed_stdout(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess[bytes]:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before kimi writes a byte: every write is EPIPE
    try:
        proc = subprocess.Popen([*kimi_executable(), *args], stdout=write, stderr=subprocess.PIPE, cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    finally:
        os.close(write)
    try:
        _, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        # its whole group: a child left holding stderr would keep communicate() waiting past pytest's timeout
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=10)
        said = err[-2000:].decode(errors="replace")
        raise AssertionError(f"kimi {' '.join(args)} did not end in 90 s with its stdout closed: {said}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, None, err)


def assert_quiet(proc: subprocess.CompletedProcess[bytes], args: list[str]) -> None:
    err = proc.stderr.decode(errors="replace")
    assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err, (args, err)
    assert proc.returncode in (0, 1, 2), (args, proc.returncode, err)


@pytest.fixture
def session_repo(repo: Path, env: dict, server: ScriptedModelServer) -> Path:
    """A workspace with undo points to list."""
    for k in range(3):
        server.add({"tool_calls": [tool_call("WriteFile", {"path": f"f{k}.txt", "content": "x\n"}, f"w{k}")]},
                   {"text": "done"})  # fmt: skip
        proc = run_kimi(["-p", f"write f{k}", "--yolo", "--no-pack"], repo, env, server)
        assert proc.returncode == 0, proc.stderr
    return repo


@pytest.mark.timeout(300)
def test_every_commands_help_and_listing_survives_a_closed_pipe(
    session_repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    listed = run_kimi(["undo", "--list"], session_repo, env)
    assert listed.returncode == 0 and listed.stdout.count("\n") >= 3, listed.stderr  # it has lines to cut
    run_env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": "sk-test"}
    commands = all_commands()
    assert ["undo"] in commands and ["worktree", "list"] in commands and ["mcp", "list"] in commands
    for args in [*LISTINGS, *([*c, "--help"] for c in commands if c)]:
        assert_quiet(closed_stdout(args, session_repo, run_env), args)
