"""Syscall-level attacks the sandbox already refuses, kept as tests so they keep failing.

Each was tried on bwrap, landlock and Docker, as root and as a non-root user:
- the i386 ABI through `int 0x80` from a 64-bit program (seccomp_data.arch is AUDIT_ARCH_I386 there: the
  filter refuses every call of a foreign ABI; Docker's profile kills the process), and the x32 ABI;
- clone3 (answered ENOSYS: its flags live in memory seccomp cannot read, so libc falls back to clone,
  whose flags are checked), the new mount API, file handles, keyrings, userfaultfd, perf, bpf, io_uring;
- the spawner's and kimi's /proc entries beyond environ and mem: fd/, cwd, and writes to oom_score_adj,
  comm and timerslack_ns;
- a hard link of a host socket into the workspace (Landlock's REFER right refuses it: a link may not gain
  rights), so the connect() supervisor never sees a host socket under a workspace path;
- stopping kimi with SIGSTOP (Landlock's signal scope, ABI 6+).
Beside them: the ordinary calls of a build (native syscalls, fork and exec, a program of its own).
"""

from __future__ import annotations

import os
import platform
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, UnixServer, need_probe

from support import wait_until

# x86_64 numbers: clone3, open_tree, move_mount, fsopen, fspick, mount_setattr, name_to_handle_at,
# open_by_handle_at, keyctl, add_key, request_key, userfaultfd, perf_event_open, bpf, io_uring_setup, setns
REFUSED = {"open_tree": 428, "move_mount": 429, "fsopen": 430, "fspick": 433, "mount_setattr": 442,
           "name_to_handle_at": 303, "open_by_handle_at": 304, "keyctl": 250, "add_key": 248, "request_key": 249,
           "userfaultfd": 323, "perf_event_open": 298, "bpf": 321, "io_uring_setup": 425, "setns": 308}  # fmt: skip
X86_64 = platform.machine() == "x86_64"


@pytest.fixture
def kimi_like() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"])
    wait_until(lambda: Path(f"/proc/{proc.pid}/comm").read_text() == "sleep\n", 10, "sleep to start")
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.skipif(not X86_64, reason="the i386 and x32 ABIs exist on x86_64 only")
def test_the_i386_and_x32_abis_are_refused(rig: Rig) -> None:
    probe = need_probe(rig)
    # i386: getpid (20), then unshare(CLONE_NEWUSER) (310); x32: getpid is 39 | 0x40000000
    result = rig.run(f"{probe} int80 20; {probe} int80 310 0x10000000; {probe} syscall 0x40000027; echo done")
    rets = [line for line in result.output.splitlines() if line.startswith("ret=")]
    assert "done" in result.output
    assert all(line.startswith("ret=-") for line in rets), result.output  # refused, or the process killed
    legit = rig.run(f"{probe} syscall 39")  # native getpid
    assert legit.output.split("ret=")[1].split()[0].isdigit(), legit.output


@pytest.mark.skipif(not X86_64, reason="x86_64 syscall numbers")
def test_namespaces_mounts_handles_keyrings_and_kernel_corners_are_refused(rig: Rig) -> None:
    probe = need_probe(rig)
    calls = "; ".join(f"{probe} syscall {nr} 0 0 0" for nr in REFUSED.values())
    result = rig.run(f"{probe} syscall 435 0 0; {calls}; echo done")
    rets = [line for line in result.output.splitlines() if line.startswith("ret=")]
    assert rets[0] == "ret=-1 errno=38", result.output  # clone3: ENOSYS, libc falls back to clone
    assert rets[1:] == ["ret=-1 errno=1"] * len(REFUSED), dict(zip(REFUSED, rets[1:], strict=False))
    legit = rig.run("sh -c 'echo child' && (sleep 0.1 & wait) && cp ./probe ./mine && ./mine syscall 39 | head -c 4")
    assert legit.output.startswith("exit code: 0") and "child" in legit.output and "ret=" in legit.output


def test_the_spawners_and_kimis_proc_entries_stay_closed(rig: Rig, kimi_like: subprocess.Popen[bytes]) -> None:
    """On landlock $PPID is the spawner (outside the command); elsewhere it is inside the sandbox."""
    pid = kimi_like.pid
    before = {name: Path(f"/proc/{pid}/{name}").read_text() for name in ("oom_score_adj", "comm")}
    outside = getattr(rig.sandbox, "spawner", None) is not None or rig.backend == "landlock"
    # fd/ lists its numbers to the same user (the directory's mode); what they are stays closed
    peek = "readlink /proc/{p}/fd/* && echo read-{p}-links; cat /proc/{p}/fd/0 /proc/{p}/fdinfo/3 && echo opened-{p};"
    spawner = peek.format(p="$PPID") + " ls /proc/$PPID/cwd/ && echo spawner-cwd;" if outside else ""
    result = rig.run(
        f"{spawner} {peek.format(p=pid)} echo 1000 > /proc/{pid}/oom_score_adj;"
        f" echo pwned > /proc/{pid}/comm; echo 1 > /proc/{pid}/timerslack_ns; kill -STOP {pid}; echo done"
    )
    assert "done" in result.output and "read-" not in result.output and "opened-" not in result.output
    assert "spawner-cwd" not in result.output, result.output
    after = {name: Path(f"/proc/{pid}/{name}").read_text() for name in before}
    assert after == before
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    assert state != "T", "kimi was stopped"
    legit = rig.run("echo 1000 > /proc/self/oom_score_adj 2>/dev/null; ls /proc/self/fd/ | wc -l; cat /proc/self/comm")
    assert legit.output.startswith("exit code: 0") and "\n" in legit.output


def test_a_hard_link_to_a_host_socket_cannot_be_made_in_the_workspace(rig: Rig) -> None:
    probe = need_probe(rig)
    folder = Path(f"/var/tmp/kimi-attack-{secrets.token_hex(4)}")
    folder.mkdir()
    os.chmod(folder, 0o777)
    host = UnixServer(str(folder / "host.sock"))
    try:
        result = rig.run(f"ln {folder}/host.sock h.sock && echo linked; {probe} connect h.sock; echo done")
        assert "linked" not in result.output and "connected" not in result.output, result.output
        assert host.accepted == 0
        legit = rig.run("echo x > a && ln a b && cat b && mkdir sub && ln a sub/c && echo hard-links-ok")
        assert "hard-links-ok" in legit.output, legit.output
    finally:
        host.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_descriptor_to_a_host_socket_or_file_reaches_nothing_through_proc_self_fd(rig: Rig) -> None:
    """Landlock does not check O_PATH opens, so a command may hold an O_PATH fd to a host socket or to a file
    of the user's, and name it as /proc/self/fd/N: the supervisor resolves that in the command's own
    fd table (not its own) and checks the inode it lands on, like any other path."""
    probe = need_probe(rig)
    folder = Path(f"/var/tmp/kimi-attack-{secrets.token_hex(4)}")
    folder.mkdir()
    os.chmod(folder, 0o777)
    host = UnixServer(str(folder / "host.sock"))
    victim = folder / "victim"
    victim.write_text("x\n")
    os.chmod(victim, 0o644)
    try:
        result = rig.run(f"{probe} opath-connect {folder}/host.sock; {probe} opath-chmod {victim} 777; echo done")
        assert "connected" not in result.output and "chmod-done" not in result.output, result.output
        assert host.accepted == 0 and victim.stat().st_mode & 0o777 == 0o644
        legit = rig.run(
            f"touch mine && {probe} opath-chmod mine 750 && {probe} serve app.sock & for i in $(seq 100);"
            f" do [ -S app.sock ] && break; sleep 0.05; done; {probe} opath-connect app.sock"
        )
        assert "chmod-done" in legit.output and "connected: pong" in legit.output, legit.output
        assert (rig.ws / "mine").stat().st_mode & 0o777 == 0o750
    finally:
        host.close()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_host_socket_bound_after_the_session_began_does_not_answer(rig: Rig) -> None:
    """bwrap covered the listening sockets the kernel listed at session start: a daemon started later (or
    an ssh ControlMaster opened later) answered. It now looks again before each command; landlock's
    supervisor checks every connect; Docker mounts nothing outside."""
    probe = need_probe(rig)
    assert rig.run("true").output.startswith("exit code: 0")  # the session is under way
    folder = Path(f"/var/tmp/kimi-attack-{secrets.token_hex(4)}")
    folder.mkdir()
    os.chmod(folder, 0o777)
    host = UnixServer(str(folder / "late.sock"))
    try:
        result = rig.run(f"{probe} connect {folder}/late.sock; echo done")
        assert "connected" not in result.output and host.accepted == 0, result.output
    finally:
        host.close()
        shutil.rmtree(folder, ignore_errors=True)
