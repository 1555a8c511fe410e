"""Inherited capabilities: what a command holds and may call, and kimi's own process, on every backend.

The finding this guards: a background task on landlock inherited the session's Landlock ruleset fd, widened
it with landlock_add_rule and read ~/.ssh from the next command. Now only fds 0-2 reach a command, the
landlock_* syscalls, ptrace and process_vm_* are refused, and kimi's /proc entry is closed or invisible.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import SECRET, Rig, need_probe

LANDLOCK_CREATE_RULESET, LANDLOCK_ADD_RULE, PTRACE, PROCESS_VM_READV, PIDFD_GETFD = 444, 445, 101, 310, 438


def test_only_stdin_stdout_and_stderr_reach_a_command(rig: Rig) -> None:
    probe = need_probe(rig)
    result = rig.run(f"{probe} fds; [ -t 0 ] || echo stdin-is-not-a-terminal")
    assert "fds: 0 1 2\n" in result.output, result.output
    assert "stdin-is-not-a-terminal" in result.output
    if rig.shell.tasks is not None:  # background tasks: the path that leaked the ruleset
        task = rig.background(f"{probe} fds")
        assert "fds: 0 1 2\n" in rig.wait_task(task)


def test_a_background_task_cannot_widen_the_sandbox_for_the_next_command(rig: Rig) -> None:
    probe = need_probe(rig)
    attack = "; ".join(
        [f"{probe} syscall {LANDLOCK_CREATE_RULESET} 0 0 1"]  # the ABI query: any landlock_* call at all
        + [f"{probe} syscall {LANDLOCK_ADD_RULE} {fd} 1 0 0" for fd in range(3, 12)]
    )
    output = rig.wait_task(rig.background(attack)) if rig.shell.tasks is not None else rig.run(attack).output
    assert output.count("ret=-1 errno=1") == 10, output  # EPERM: refused by seccomp, never attempted
    after = rig.run("cat ~/.ssh/id_rsa ~/.kimi/config.toml; echo legit > inside.txt; cat inside.txt")
    assert "PRIVATE KEY" not in after.output and SECRET not in after.output
    assert "legit" in after.output and (rig.ws / "inside.txt").read_text() == "legit\n"


def test_ptrace_process_vm_and_pidfd_getfd_are_refused(rig: Rig) -> None:
    probe = need_probe(rig)
    result = rig.run(
        f"sleep 30 & child=$!; {probe} syscall {PTRACE} 16 $child; {probe} syscall {PROCESS_VM_READV} $child 0 0 0 0 0;"
        f" {probe} syscall {PIDFD_GETFD} 0 0 0; kill $child && echo signalled-own-child"
    )
    assert result.output.count("ret=-1 errno=1") == 3, result.output
    assert "signalled-own-child" in result.output  # signals within the command still work


@pytest.fixture
def kimi_like() -> Iterator[subprocess.Popen[bytes]]:
    """A process outside the sandbox, of the same user, holding the API key in its environment: kimi."""
    proc = subprocess.Popen(["sleep", "300"], env={"KIMI_API_KEY": SECRET, "PATH": os.environ["PATH"]})
    yield proc
    proc.kill()
    proc.wait()


def test_kimis_process_is_out_of_reach(rig: Rig, kimi_like: subprocess.Popen[bytes]) -> None:
    pid = kimi_like.pid
    result = rig.run(
        f"cat /proc/{pid}/environ; head -c 64 /proc/{pid}/mem; ls -l /proc/{pid}/fd/ /proc/{pid}/cwd/;"
        f" kill -TERM {pid}; kill -KILL {pid}; grep -q HOME= /proc/self/environ && echo own-environ-readable"
    )
    assert SECRET not in result.output, result.output
    assert kimi_like.poll() is None  # no signal reached it
    assert "own-environ-readable" in result.output  # the command reads its own /proc entry


def test_a_command_cannot_signal_the_process_that_started_it(rig: Rig) -> None:
    """On landlock the spawner is the parent; Landlock's signal scope (ABI 6) keeps it, and kimi, safe."""
    result = rig.run("kill -KILL $PPID; kill -TERM 1; echo still-here")
    assert "still-here" in result.output
    spawner = getattr(rig.sandbox, "spawner", None)
    if spawner is not None:
        assert spawner.proc.poll() is None
        assert rig.run("echo next-command-works").output.startswith("exit code: 0")


def test_the_spawner_holds_no_secret_in_its_environment(tmp_path: Path) -> None:
    """kimi's environment holds the API key; the spawner, the one process a command could name, does not."""
    from sandbox_fixtures import make_rig

    if os.environ.get("KIMI_TEST_BACKENDS") and "landlock" not in os.environ["KIMI_TEST_BACKENDS"]:
        pytest.skip("landlock is not among KIMI_TEST_BACKENDS")
    the_rig, sandbox = make_rig(tmp_path, "landlock")
    try:
        assert the_rig.run("true").output.startswith("exit code: 0")
        spawner = sandbox.spawner  # type: ignore[attr-defined]
        environ = Path(f"/proc/{spawner.proc.pid}/environ").read_bytes()
        assert SECRET.encode() not in environ and b"KIMI_API_KEY" not in environ
    finally:
        the_rig.close()


def test_kill_minus_one_reaches_nothing_outside_the_command(rig: Rig, kimi_like: subprocess.Popen[bytes]) -> None:
    """`kill -9 -1` signals every process the user may signal: kimi, the spawner, the user's shell. Run only
    as a non-root user (the CI run as kimi-ci does): as root a failure would take the machine down."""
    if os.geteuid() == 0:
        pytest.skip("too dangerous to try as root; the non-root CI run covers it")
    result = rig.run("kill -9 -1; echo still-here")
    assert "still-here" in result.output
    assert kimi_like.poll() is None
    assert rig.run("echo next-command").output.startswith("exit code: 0")
