"""A hook that leaves something running in the background still gives its answer, and leaves nothing behind.

The runner read a hook's stdout and stderr until both closed. A child the hook started in the background
(`helper &`: a log shipper, a daemon a tool starts) inherits them, so the runner waited for the hook's whole
timeout although the hook had exited at once, then reported it "timed out" and dropped its exit code: the
user's PreToolUse guard that blocked `rm` (exit 2) failed open and the command ran, after a 25 s stall, and
the helper kept running after kimi (the group was killed only while the hook itself was alive). Now the
hook's exit ends the wait (kimi_cli.extensions.hooks.runner.EXIT_GRACE) and what still holds its pipes is
killed with its group. Beside it: the guard lets an ordinary command through at once, and what the hook
writes before it exits reaches the model.
"""

from __future__ import annotations

import time
from pathlib import Path

from scripted_server import ScriptedModelServer
from support import run_kimi, tool_call, tool_results, wait_until

TIMEOUT = 60  # a whole run under load (2 cores, 3 workers) took 20 s once; waiting for the hook takes 60


def guard(home: Path, pidfile: Path) -> None:
    """The user's own guard: blocks anything naming victim.txt, and starts a helper that holds its stdout."""
    script = home / "guard.sh"
    script.write_text(
        "#!/bin/sh\ninput=$(cat)\n"
        f"sleep 300 & echo $! > {pidfile}\n"
        'case "$input" in *victim*) echo "guard: victim.txt stays" >&2; exit 2;; esac\n'
        "echo guard: fine\nexit 0\n"
    )
    config = home / ".kimi" / "config.toml"
    config.write_text(
        config.read_text() + f'\n[[hooks.PreToolUse]]\nmatcher = "Shell"\ntimeout = {TIMEOUT}\n'
        f'command = "sh {script}"\n'
    )


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_a_guard_that_leaves_a_helper_running_still_blocks_and_leaves_nothing_behind(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    pidfile = tmp_path / "helper.pid"
    guard(home, pidfile)
    (repo / "victim.txt").write_text("the user's file")
    server.add({"tool_calls": [tool_call("Shell", {"command": "rm -f victim.txt"}, "d")]}, {"text": "done"})
    started = time.monotonic()
    proc = run_kimi(["-p", "go"], repo, env, server, timeout=240)
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = tool_results(server, 1)[0]
    assert (repo / "victim.txt").exists(), result
    assert "victim.txt stays" in result
    assert took < TIMEOUT, f"{took:.1f} s: the run waited for the hook's timeout"
    helper = int(pidfile.read_text())
    wait_until(lambda: not alive(helper), timeout=5, what="the hook's background helper to be gone")


def test_the_same_guard_lets_an_ordinary_command_through_at_once(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    guard(home, tmp_path / "helper.pid")
    server.add({"tool_calls": [tool_call("Shell", {"command": "echo ordinary-ran"}, "o")]}, {"text": "done"})
    started = time.monotonic()
    proc = run_kimi(["-p", "go"], repo, env, server, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ordinary-ran" in tool_results(server, 1)[0]
    assert time.monotonic() - started < TIMEOUT
