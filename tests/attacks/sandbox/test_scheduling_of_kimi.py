"""A command cannot starve kimi or the spawner: priority, scheduler, affinity and I/O priority of another
process are out of its reach.

The finding (landlock, non-root): setpriority, sched_setaffinity, sched_setscheduler(SCHED_IDLE) and
ioprio_set on kimi's own pid and on the spawner's all succeeded, and lasted for the session; only the USER
kinds were refused. None of them passes a ptrace check, and Landlock's scope covers signals only. Now pid 0
(or who 0) passes the seccomp filter, and any other pid goes to the supervisor, which lets the call run only
on a process of the command's own process group (as prlimit64). On bwrap the command is in a pid namespace
of its own: kimi's pid names nothing there.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Iterator

import pytest
from sandbox_fixtures import Rig, backends

from kimi_cli.kernel.restrict import machine, seccomp_program

from scripted_server import ScriptedModelServer
from seccomp_bpf import ALLOW, EPERM, NOTIFY, X86, decide
from support import run_kimi, tool_call, tool_results

LOCAL = [b for b in backends() if b != "docker"]  # the Docker image has no Python; its pid namespace as bwrap's
NR = {"x86_64": {"ioprio_set": 251, "ioprio_get": 252, "sched_setattr": 314},
      "aarch64": {"ioprio_set": 30, "ioprio_get": 31, "sched_setattr": 274}}  # fmt: skip
IOPRIO_IDLE = 3 << 13

ATTACK = """
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
IOPRIO_SET, SCHED_SETATTR = {ioprio_set}, {sched_setattr}
def raw(nr, *args):
    if libc.syscall(nr, *args) != 0:
        raise OSError(ctypes.get_errno(), "")
def attempt(what, call):
    try:
        call()
        print(what, "CHANGED")
    except OSError as exc:
        print(what, "refused", exc.errno)
idle = struct.pack("=IIQiIQQQ", 48, os.SCHED_IDLE, 0, 0, 0, 0, 0, 0)  # struct sched_attr, version 0
for pid in map(int, sys.argv[1:]):
    attempt(f"nice {{pid}}", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
    attempt(f"group-nice {{pid}}", lambda: os.setpriority(os.PRIO_PGRP, os.getpgid(pid), 19))
    attempt(f"idle {{pid}}", lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0)))
    attempt(f"setattr {{pid}}", lambda: raw(SCHED_SETATTR, pid, idle, 0))
    attempt(f"affinity {{pid}}", lambda: os.sched_setaffinity(pid, {{0}}))
    attempt(f"ioprio {{pid}}", lambda: raw(IOPRIO_SET, 1, pid, {idle_io}))
    attempt(f"group-ioprio {{pid}}", lambda: raw(IOPRIO_SET, 2, os.getpgid(pid), {idle_io}))
print("attacked")
""".format(**NR.get(machine(), NR["x86_64"]), idle_io=IOPRIO_IDLE)
ATTACK_FILE = "attack.py"


def _state(pid: int) -> tuple[object, ...]:
    """What the attack would change, read from outside: nice, scheduler, affinity, I/O priority."""
    libc = ctypes.CDLL(None, use_errno=True)
    ioprio = libc.syscall(NR.get(machine(), NR["x86_64"])["ioprio_get"], 1, pid)
    return os.getpriority(os.PRIO_PROCESS, pid), os.sched_getscheduler(pid), os.sched_getaffinity(pid), ioprio


@pytest.fixture
def kimi_like() -> Iterator[subprocess.Popen[bytes]]:
    """A process of the same user outside the sandbox, in a group of its own (so the group attack on it
    could reach nothing else if it passed)."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture(params=LOCAL)
def local_rig(request: pytest.FixtureRequest, tmp_path) -> Iterator[Rig]:  # type: ignore[no-untyped-def]
    from sandbox_fixtures import make_rig

    rig, _ = make_rig(tmp_path, request.param)
    (rig.ws / ATTACK_FILE).write_text(ATTACK)
    yield rig
    rig.close()


def test_another_processes_priority_scheduler_affinity_and_io_priority_stay_as_they_are(
    local_rig: Rig, kimi_like: subprocess.Popen[bytes]
) -> None:
    rig = local_rig
    rig.run("true")  # landlock: the spawner is started
    spawner = getattr(getattr(rig.sandbox, "spawner", None), "proc", None)
    targets = [kimi_like.pid, *([spawner.pid] if spawner is not None else [])]
    before = [_state(pid) for pid in targets]
    result = rig.run(f"python3 {ATTACK_FILE} {' '.join(map(str, targets))}")
    assert "attacked" in result.output and "CHANGED" not in result.output, result.output
    assert [_state(pid) for pid in targets] == before
    assert rig.run("echo still-here").output.startswith("exit code: 0")


LEGIT = (
    "nice -n 5 sh -c 'echo nice=$(cut -d\" \" -f19 /proc/self/stat)' && "
    "renice -n 7 -p $$ >/dev/null && echo renice=$(cut -d' ' -f19 /proc/$$/stat) && "
    "sh -c 'sleep 5 & renice -n 9 -p $! >/dev/null && echo child-renice-ok; kill $!' && "
    "taskset -c 0 true && taskset -pc 0 $$ >/dev/null && echo taskset-ok && "
    "chrt -i 0 true && echo chrt-ok && ionice -c 3 true && ionice -c 3 -p $$ && echo ionice-ok && "
    "python3 -c 'import os, threading; t = threading.Thread(target=lambda: os.sched_setaffinity("
    "threading.get_native_id(), {0})); t.start(); t.join(); os.sched_setaffinity(os.getpid(), {0}); "
    'print("thread-ok")\''
)


@pytest.mark.parametrize("backend", LOCAL)
def test_a_command_still_renices_and_pins_itself_and_its_children(backend: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """nice, renice of itself and of a child by pid, taskset, chrt -i, ionice, a thread pinning itself by
    its own id (what OpenMP runtimes do): pid 0 passes the filter, the command's own pids the supervisor."""
    from sandbox_fixtures import make_rig

    rig, _ = make_rig(tmp_path, backend)
    try:
        result = rig.run(LEGIT)
    finally:
        rig.close()
    assert result.output.startswith("exit code: 0"), result.output
    for line in ("nice=5", "renice=7", "child-renice-ok", "taskset-ok", "chrt-ok", "ionice-ok", "thread-ok"):
        assert line in result.output.splitlines(), (line, result.output)


@pytest.mark.parametrize("backend", [b for b in LOCAL if b == "bwrap"])
def test_on_bwrap_the_users_other_processes_are_out_of_the_pid_namespace(
    backend: str,
    tmp_path,
    kimi_like: subprocess.Popen[bytes],  # type: ignore[no-untyped-def]
) -> None:
    """bwrap's seccomp program leaves these calls alone: the pid namespace is what keeps kimi out of reach.
    Its pid names no process there, and PRIO_USER/IOPRIO_WHO_USER walk only the namespace's processes
    (the USER kinds run only as a non-root user: as root a failure would renice every root process)."""
    from sandbox_fixtures import make_rig

    rig, _ = make_rig(tmp_path, backend)
    (rig.ws / ATTACK_FILE).write_text(ATTACK)
    before = _state(kimi_like.pid)
    user_kinds = os.geteuid() != 0
    every = f"; python3 -c 'import os; os.setpriority(os.PRIO_USER, {os.getuid()}, 15)'" if user_kinds else ""
    try:
        result = rig.run(f"python3 {ATTACK_FILE} {kimi_like.pid}{every}; echo nice=$(cut -d' ' -f19 /proc/self/stat)")
    finally:
        rig.close()
    assert f"nice {kimi_like.pid} refused 3" in result.output, result.output  # ESRCH: no such process there
    assert "CHANGED" not in result.output, result.output
    if user_kinds:
        assert "nice=15" in result.output, result.output  # it reached the namespace's own processes
    assert _state(kimi_like.pid) == before


def test_the_filter_sends_another_pid_to_the_supervisor_and_passes_pid_0() -> None:
    supervised = seccomp_program("x86_64", network=False, connect="notify", metadata="notify")
    plain = seccomp_program("x86_64", network=False, connect="deny")
    bwrap = seccomp_program("x86_64", network=True, host_ns=False)
    for prog, other in ((supervised, NOTIFY), (plain, EPERM)):
        for nr in (142, 144, 203, 314):  # sched_setparam, sched_setscheduler, sched_setaffinity, sched_setattr
            assert decide(prog, X86, nr, 0, 0x7000) == ALLOW and decide(prog, X86, nr, 1234, 0x7000) == other, nr
            assert decide(bwrap, X86, nr, 1234, 0x7000) == ALLOW
        for which in (0, 1):  # setpriority: PRIO_PROCESS, PRIO_PGRP
            assert decide(prog, X86, 141, which, 0, 19) == ALLOW and decide(prog, X86, 141, which, 1234, 19) == other
        for which in (1, 2):  # ioprio_set: IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP
            assert decide(prog, X86, 251, which, 0, IOPRIO_IDLE) == ALLOW
            assert decide(prog, X86, 251, which, 1234, IOPRIO_IDLE) == other
        assert decide(prog, X86, 141, 2, 0, 19) == EPERM and decide(prog, X86, 251, 3, 0, 0) == EPERM  # USER kinds
    arm = seccomp_program("aarch64", network=False, connect="notify", metadata="notify")
    for nr in (118, 119, 122, 274):
        assert decide(arm, 0xC00000B7, nr, 1234) == NOTIFY and decide(arm, 0xC00000B7, nr, 0) == ALLOW


FIND_KIMI = "spawner=$PPID; kimi=$(awk '/^PPid/{print $2}' /proc/$PPID/status); "


@pytest.mark.parametrize("backend", LOCAL)
def test_kimi_p_a_command_cannot_starve_kimi_or_the_spawner(
    backend: str,
    repo,
    env: dict,
    server: ScriptedModelServer,
    kimi_like: subprocess.Popen[bytes],  # type: ignore[no-untyped-def]
) -> None:
    """End to end, as found: the command names kimi's pid (its parent's parent on landlock) and the
    spawner's; on bwrap those are the namespace's own, so it names a process outside by its host pid."""
    (repo / ATTACK_FILE).write_text(ATTACK)
    targets = f'"$kimi" "$spawner" {kimi_like.pid}' if backend == "landlock" else str(kimi_like.pid)
    before = _state(kimi_like.pid)
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": f"{FIND_KIMI}python3 {ATTACK_FILE} {targets}"}, "starve")]},
        {"tool_calls": [tool_call("Shell", {"command": "nice -n 3 echo work > work.txt && cat work.txt"}, "w")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "go", "--sandbox", backend], repo, env, server, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    attack, work = tool_results(server, 2)
    assert "attacked" in attack and "CHANGED" not in attack, attack
    assert attack.count("refused") == 7 * len(targets.split()), attack
    assert work.startswith("exit code: 0") and "work" in work
    assert _state(kimi_like.pid) == before
