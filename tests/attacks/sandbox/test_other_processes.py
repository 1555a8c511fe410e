"""Other processes of the user's, reached without ptrace or a signal.

The attack: on landlock a command shares the host's pid namespace, and prlimit64 on a process of the same
user needs no ptrace access and no capability, and Landlock's scope covers signals only. So a command could
set kimi's RLIMIT_CORE to unlimited and its RLIMIT_CPU to 0: kimi got SIGXCPU and dumped its memory, the
API key in it, as `core` into its working folder, the workspace. The same CPU limit on the spawner and on
kimi killed both before either could kill the command's group, so its children lived on. Now prlimit64
reaches only the caller's own command (pid 0, or a process of its process group, checked by the
supervisor), and setpriority/ioprio_set of every process of the user are refused.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, backends, need_probe

from kimi_cli.kernel.restrict import seccomp_program

from scripted_server import ScriptedModelServer
from seccomp_bpf import ALLOW, EPERM, NOTIFY, X86, decide
from support import TEST_KEY, run_kimi, tool_call, tool_results

RLIMIT_CPU, RLIMIT_CORE, SETPRIORITY, IOPRIO_SET = 0, 4, 141, 251


@pytest.fixture
def kimi_like() -> Iterator[subprocess.Popen[bytes]]:
    """A process outside the sandbox, of the same user: kimi, as a command could name it."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


def _limits(pid: int) -> str:
    return Path(f"/proc/{pid}/limits").read_text()


def test_another_processes_limits_cannot_be_changed(rig: Rig, kimi_like: subprocess.Popen[bytes]) -> None:
    probe = need_probe(rig)
    pid = kimi_like.pid
    spawner = getattr(getattr(rig.sandbox, "spawner", None), "proc", None)
    before = _limits(pid)
    parent = f"{probe} prlimit $PPID {RLIMIT_CPU} 0;" if spawner is not None else ""  # else $PPID is inside
    result = rig.run(f"{probe} prlimit {pid} {RLIMIT_CORE} inf; {probe} prlimit {pid} {RLIMIT_CPU} 0; {parent} echo x")
    assert "limit-set" not in result.output, result.output
    assert _limits(pid) == before and kimi_like.poll() is None
    if spawner is not None:  # landlock: the command's parent is the spawner
        assert "Max cpu time              unlimited" in _limits(spawner.pid)
        assert rig.run("echo spawner-alive").output.startswith("exit code: 0")


def test_a_command_still_sets_its_own_limits(rig: Rig) -> None:
    """ulimit (pid 0), a limit read of any process, and prlimit by the command's own pid (psutil does that)."""
    probe = need_probe(rig)
    result = rig.run(
        f"ulimit -n 256 && ulimit -c 0 && {probe} prlimit $$ {RLIMIT_CORE} 0 && sh -c 'sleep 5 & "
        f"{probe} prlimit $! {RLIMIT_CORE} 0; kill $!' && ulimit -n"
    )
    assert result.output.startswith("exit code: 0"), result.output
    assert result.output.count("limit-set") == 2 and "\n256\n" in result.output, result.output


def test_priorities_of_every_process_of_the_user_cannot_be_changed(rig: Rig) -> None:
    """setpriority(PRIO_USER) and ioprio_set(IOPRIO_WHO_USER) reach all the user's processes, kimi's
    included. The who is a uid nobody runs as: the call would change nothing even if it passed (ESRCH, 3)."""
    probe = need_probe(rig)
    result = rig.run(f"{probe} syscall {SETPRIORITY} 2 54321 19; {probe} syscall {IOPRIO_SET} 3 54321 0;"
                     f" {probe} syscall {SETPRIORITY} 0 0 10 && echo own-priority-ok")  # fmt: skip
    lines = [line for line in result.output.splitlines() if line.startswith("ret=")]
    if rig.backend == "landlock":  # a pid namespace keeps the others out of reach on bwrap and Docker
        assert lines[:2] == ["ret=-1 errno=1", "ret=-1 errno=1"], result.output
    assert "own-priority-ok" in result.output and lines[2] == "ret=0 errno=0"


def test_the_filter_rules_for_other_processes() -> None:
    supervised = seccomp_program("x86_64", network=False, connect="notify", metadata="notify")
    plain = seccomp_program("x86_64", network=False, connect="deny")
    for prog, other in ((supervised, NOTIFY), (plain, EPERM)):
        assert decide(prog, X86, 302, 0, 4, 0x7000, 0) == ALLOW  # prlimit64(0, ...): itself
        assert decide(prog, X86, 302, 1234, 4, 0, 0x7000) == ALLOW  # reading another's: harmless
        assert decide(prog, X86, 302, 1234, 4, 0x7000, 0) == other  # setting another's
        assert decide(prog, X86, 302, 1234, 4, 1 << 32, 0) == other  # a pointer above 4 GiB is not NULL
    assert decide(supervised, X86, 141, 2, 0, 19) == EPERM and decide(supervised, X86, 141, 0, 0, 19) == ALLOW
    assert decide(supervised, X86, 251, 3, 0, 0) == EPERM and decide(supervised, X86, 251, 1, 0, 0) == ALLOW
    bwrap = seccomp_program("x86_64", network=True, host_ns=False)
    assert decide(bwrap, X86, 302, 1234, 4, 0x7000, 0) == ALLOW  # a pid namespace of its own


CORE_ATTACK = (
    "kimi=$(awk '/^PPid/{print $2}' /proc/$PPID/status); echo kimi=$kimi;"
    " prlimit --pid $kimi --core=unlimited: ; prlimit --pid $kimi --cpu=0: ; prlimit --pid $PPID --cpu=0: ;"
    " prlimit --pid $kimi --core | tail -1"
)


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])
def test_kimi_cannot_be_made_to_dump_its_memory_into_the_workspace(
    backend: str, repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    """End to end: the attack as it was found, through `kimi -p`. Before the fix kimi died of SIGXCPU right
    after this command, leaving `core` (with the API key in it) in the repository."""
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": CORE_ATTACK}, "core")]},
        {"tool_calls": [tool_call("Shell", {"command": "echo work > work.txt && cat work.txt"}, "work")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "go", "--sandbox", backend], repo, env, server, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    attack, work = tool_results(server, 2)
    assert "work" in work
    leaked = [p for p in repo.rglob("*") if p.is_file() and TEST_KEY.encode() in p.read_bytes()]
    assert not leaked and not list(repo.glob("core*")), (leaked, attack)


FLOOD = r"""
import socket, threading, time
listener = socket.socket(socket.AF_UNIX); listener.bind("full.sock"); listener.listen(0)  # never accepts
def dial():
    try:
        s = socket.socket(socket.AF_UNIX); s.connect("full.sock"); time.sleep(30)
    except OSError:
        pass
for _ in range(900):
    threading.Thread(target=dial, daemon=True).start()
time.sleep(4)
print("flooded")
"""


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])  # the Docker image has no Python
def test_a_flood_of_connects_does_not_take_the_other_commands_down(backend: str, tmp_path: Path) -> None:
    """On landlock every connect() waits in the spawner, two descriptors each: 900 blocked connects to a
    listener that never accepts used to exhaust them (at the common 1,024 limit), and the spawner died with
    every command of the session. Waiting connects are capped now; beyond the cap they fail at once."""
    import resource

    from sandbox_fixtures import make_rig

    rig, _ = make_rig(tmp_path, backend)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))  # what a user's session has
    try:
        assert rig.run("true").output.startswith("exit code: 0")  # the spawner starts with that limit
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        (rig.ws / "flood.py").write_text(FLOOD.replace("time.sleep(4)", "time.sleep(20)"))
        task = rig.background("sleep 60")
        flood = rig.background("python3 flood.py")
        rig.loop.run_until_complete(asyncio.sleep(6))  # the flood fills up
        spawner = getattr(rig.sandbox, "spawner", None)
        if spawner is not None:  # landlock: the waiting connects hold the spawner's descriptors
            used = len(os.listdir(f"/proc/{spawner.proc.pid}/fd"))
            assert used < 600, f"the spawner holds {used} of its 1,024 descriptors"
        assert rig.run("echo during").output.startswith("exit code: 0")  # a command starts meanwhile
        assert rig.shell.tasks is not None and rig.shell.tasks.get(task).running  # the other command lives
        assert rig.shell.tasks.get(flood).running
        assert spawner is None or spawner.proc.poll() is None
    finally:
        rig.close()
