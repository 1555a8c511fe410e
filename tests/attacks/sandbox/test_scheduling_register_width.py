"""landlock: a pid passed with its upper 32 bits set reaches kimi no more than the plain pid does.

seccomp sees the 64-bit register, the kernel acts on its low 32 bits (pid_t). The attempt: setpriority,
sched_setaffinity and prlimit64 on kimi's pid with bit 32 set, so that a filter comparing the whole
register (or a supervisor reading it as a 64-bit number) would see "not kimi". It held: the filter loads
the low word, and the supervisor reads the pid as the kernel does (kimi_cli/kernel/supervise.py `_int`).
Beside it: the same spelling on the command's own child is let through and changes the child.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, backends, make_rig

SCRIPT = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
WIDE = 1 << 32
def call(what, nr, *args):
    r = libc.syscall(nr, *args)
    print(what, "CHANGED" if r == 0 else "refused", ctypes.get_errno() if r else "")
def aim(pid):
    call(f"nice {pid}", 141, 0, ctypes.c_long(pid | WIDE), 19)
    call(f"affinity {pid}", 203, ctypes.c_long(pid | WIDE), 8, ctypes.byref(ctypes.c_ulong(1)))
    call(f"prlimit {pid}", 302, ctypes.c_long(pid | WIDE), 4, ctypes.byref((ctypes.c_ulong * 2)(0, 0)), None)
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
aim(int(sys.argv[1]))
aim(child)
print("child nice", os.getpriority(os.PRIO_PROCESS, child))
os.kill(child, 9)
"""


@pytest.fixture(params=[b for b in backends() if b == "landlock"])
def landlock_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    the_rig, _ = make_rig(tmp_path, request.param)
    yield the_rig
    the_rig.close()


def test_a_wide_pid_of_kimi_is_refused_and_the_commands_own_child_is_not(landlock_rig: Rig) -> None:
    rig, kimi = landlock_rig, os.getpid()
    before = (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0))
    (rig.ws / "wide.py").write_text(SCRIPT)
    out = rig.run(f"python3 wide.py {kimi}").output
    for what in ("nice", "affinity", "prlimit"):
        assert f"{what} {kimi} refused" in out, out
    assert (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0)) == before
    assert "CHANGED" in out.split(f"prlimit {kimi}", 1)[1] and "child nice 19" in out, out  # its own: allowed
