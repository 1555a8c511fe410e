"""What Landlock leaves open outside the workspace: setuid bits, /dev/shm, the user's terminal.

Each runs on every backend (bwrap and Docker get the same seccomp rules). What cannot be enforced on
landlock (modes without setuid bits, timestamps of files the user owns) is stated in docs/sandbox.md.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import select
import stat
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, need_probe

TIOCSTI, UNSHARE = 0x5412, 272


def test_no_setuid_or_setgid_bit_can_be_set(rig: Rig) -> None:
    probe = need_probe(rig)
    result = rig.run(
        "touch tool; chmod 4755 tool; chmod g+s tool; chmod u+s,g+s tool;"
        f" {probe} open-mode made-setuid 4755; {probe} open-mode made-plain 644; chmod 755 tool && echo chmod-ok"
    )
    assert not (rig.ws / "tool").stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    assert not (rig.ws / "made-setuid").exists()
    assert "chmod-ok" in result.output and (rig.ws / "tool").stat().st_mode & 0o777 == 0o755  # the legit chmod
    assert (rig.ws / "made-plain").exists()


def test_a_file_outside_the_workspace_gets_no_setuid_bit(rig: Rig) -> None:
    target = Path(f"/var/tmp/kimi-attack-{secrets.token_hex(4)}")
    target.write_text("#!/bin/sh\n")
    os.chmod(target, 0o755)
    try:
        rig.run(f"chmod u+s {target}; chmod 4777 {target}")
        assert not target.stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    finally:
        target.unlink()


def test_shared_memory_of_the_host_cannot_be_written(rig: Rig) -> None:
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    shm = Path(f"/dev/shm/kimi-attack-{secrets.token_hex(4)}")
    shm.write_text("host\n")
    os.chmod(shm, 0o666)
    try:
        result = rig.run(f"echo injected >> {shm}; cat {shm}; echo x > /dev/null && head -c 8 /dev/urandom | wc -c")
        assert shm.read_text() == "host\n"
        assert result.output.rstrip().split("\n")[-1].strip() == "8" or "\n8\n" in result.output  # /dev/null, urandom
    finally:
        shm.unlink()


def test_the_users_terminal_can_be_neither_read_nor_written(rig: Rig) -> None:
    probe = need_probe(rig)
    master, slave = os.openpty()
    name = os.ttyname(slave)
    os.set_blocking(master, False)
    try:
        result = rig.run(
            f"echo INJECTED > {name}; timeout 1 cat {name}; tty; echo x > /dev/tty;"
            f" {probe} syscall 16 0 {TIOCSTI} 0; echo done"
        )
        assert "done" in result.output
        ready, _, _ = select.select([master], [], [], 0.2)
        assert not ready or b"INJECTED" not in os.read(master, 4096)
        assert "not a tty" in result.output
        assert "ret=-1 errno=1" in result.output  # TIOCSTI is refused before it reaches any tty
    finally:
        os.close(master)
        os.close(slave)


def test_no_new_namespaces(rig: Rig) -> None:
    probe = need_probe(rig)
    result = rig.run(f"{probe} syscall {UNSHARE} 0x10000000; sh -c 'echo child-process-works'")
    assert "ret=-1 errno=1" in result.output and "child-process-works" in result.output


def test_shared_memory_segments_of_the_host_cannot_be_attached(rig: Rig) -> None:
    """SysV IPC is not a path: Landlock never sees it. Landlock's seccomp refuses it; bwrap and Docker have
    an IPC namespace of their own."""
    probe = need_probe(rig)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(0, 4096, 0o1666)  # IPC_PRIVATE, IPC_CREAT | rw for everyone: DAC keeps nobody out
    assert shmid >= 0, os.strerror(ctypes.get_errno())
    try:
        address = libc.shmat(shmid, None, 0)
        ctypes.memmove(address, b"SHM-SECRET-31\0", 14)
        result = rig.run(f"{probe} shm-read {shmid}; echo done")
        assert "done" in result.output and "SHM-SECRET-31" not in result.output, result.output
        libc.shmdt(ctypes.c_void_p(address))
    finally:
        libc.shmctl(shmid, 0, None)  # IPC_RMID
