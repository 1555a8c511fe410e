"""The landlock backend on kernels older than this one (Landlock ABI 2 to 5).

Ubuntu 24.04 (Linux 6.8, ABI 4), Debian 12 (6.1, ABI 3) and Ubuntu 22.04 (5.15, ABI 1) are where landlock is
the backend most users get, and there Landlock has no signal scope (ABI 6): a command could SIGKILL or
SIGSTOP kimi and the spawner, and `kill -9 -1` every process of the user. Below ABI 3 Landlock does not
handle truncate, so as root `truncate(2)` of /etc/passwd worked. Now the seccomp program sends signals
to the supervisor there (only the command's own process group is let through) and truncate by path to the
same supervisor as chmod (only inside the workspace). Each test runs the real sandbox with the ABI capped
(LandlockSandbox(abi=N)): the kernel's Landlock then enforces exactly what that older ABI would.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import backends, probe_binary

from kimi_cli.kernel.restrict import seccomp_program
from kimi_cli.sandbox.backends.landlock.backend import LandlockSandbox
from kimi_cli.sandbox.policy import build_policy

from seccomp_bpf import X86, decide
from support import require, wait_until

pytestmark = pytest.mark.skipif("landlock" not in backends(), reason="landlock is not among KIMI_TEST_BACKENDS")
ALLOW, EPERM, NOTIFY = 0x7FFF0000, 0x00050001, 0x7FC00000


@pytest.fixture
def kimi_like() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"])
    wait_until(lambda: Path(f"/proc/{proc.pid}/comm").read_text() == "sleep\n", 10, "sleep to start")
    yield proc
    proc.kill()
    proc.wait()


def _sandbox(tmp_path: Path, abi: int) -> LandlockSandbox:
    ws, private = tmp_path / "ws", tmp_path / "tmp"
    ws.mkdir()
    private.mkdir()
    probe = probe_binary()
    require("cc", probe is not None, "a C compiler builds the sandbox probe (tests/sandbox_probe.c)")
    assert probe is not None
    (ws / "probe").write_bytes(probe.read_bytes())
    os.chmod(ws / "probe", 0o755)
    return LandlockSandbox(build_policy(ws, private), 30_000, abi=abi)


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize("abi", [4, 5])
def test_without_the_signal_scope_nothing_outside_the_command_gets_a_signal(
    abi: int, tmp_path: Path, kimi_like: subprocess.Popen[bytes]
) -> None:
    sandbox = _sandbox(tmp_path, abi)
    pid = kimi_like.pid
    try:
        assert not sandbox.signal_scope
        result = asyncio.run(sandbox.run(
            f"kill -STOP {pid}; kill -0 {pid} && echo probed; kill -9 $PPID; echo spawner=$?;"
            f" python3 -c 'import os, signal; os.kill({pid}, 19)' 2>/dev/null || echo os-kill-refused;"
            f" python3 -c 'import os, signal; signal.pidfd_send_signal(os.pidfd_open({pid}), 19)' 2>/dev/null"
            " || echo pidfd-refused;"
            f" python3 -c 'import fcntl, os; r, w = os.pipe(); fcntl.fcntl(r, fcntl.F_SETOWN, {pid})' 2>/dev/null"
            " || echo setown-refused; echo done", 60))  # fmt: skip
        out = result.output
        assert "done" in out and "probed" not in out and "spawner=1" in out, out
        assert all(f"{w}-refused" in out for w in ("os-kill", "pidfd", "setown")), out
        assert _state(pid) != "T" and kimi_like.poll() is None
        assert sandbox.spawner is not None and sandbox.spawner.proc.poll() is None
        legit = asyncio.run(sandbox.run(
            "sleep 30 & kill $! && wait $!; echo job=$?; kill -0 $$ && kill -0 0 && echo self-ok;"
            " python3 -c 'import os, signal, subprocess; p = subprocess.Popen([\"sleep\", \"30\"]);"
            " signal.pidfd_send_signal(os.pidfd_open(p.pid), 9); print(\"pidfd-own\", p.wait())'", 60))  # fmt: skip
        assert "job=143" in legit.output and "self-ok" in legit.output and "pidfd-own -9" in legit.output, legit.output
    finally:
        sandbox.close_sync()


def test_below_abi_3_truncate_by_path_reaches_only_the_workspace(tmp_path: Path) -> None:
    victim = Path(f"/var/tmp/kimi-attack-{secrets.token_hex(4)}")
    victim.write_text("host data\n")
    sandbox = _sandbox(tmp_path, 2)
    try:
        result = asyncio.run(sandbox.run(
            f"python3 -c 'import os; os.truncate(\"{victim}\", 0)' 2>/dev/null || echo refused;"
            " echo 0123456789 > mine && python3 -c 'import os; os.truncate(\"mine\", 4)' && cat mine", 60))  # fmt: skip
        assert victim.read_text() == "host data\n"
        assert "refused" in result.output and "0123" in result.output, result.output
    finally:
        sandbox.close_sync()
        victim.unlink()


def test_the_filter_rules_without_a_signal_scope() -> None:
    prog = seccomp_program("x86_64", network=False, connect="notify", metadata="notify", signals="notify")
    assert decide(prog, X86, 62, 0, 9) == ALLOW  # kill(0): the caller's own group
    assert decide(prog, X86, 62, 0xFFFFFFFF, 9) == EPERM  # kill(-1): everything the user may signal
    assert decide(prog, X86, 62, 1234, 9) == NOTIFY and decide(prog, X86, 234, 1, 2, 9) == NOTIFY
    assert decide(prog, X86, 72, 3, 8, 1234) == NOTIFY and decide(prog, X86, 72, 3, 8, 0) == ALLOW  # F_SETOWN
    assert decide(prog, X86, 72, 3, 15, 0x7000) == EPERM and decide(prog, X86, 72, 3, 1, 0) == ALLOW  # _EX, F_GETFD
    plain = seccomp_program("x86_64", network=False, connect="deny", signals="deny", truncate=False)
    assert decide(plain, X86, 62, 1234, 9) == EPERM and decide(plain, X86, 76) == EPERM  # no supervisor
    scoped = seccomp_program("x86_64", network=False, connect="notify", metadata="notify")
    assert decide(scoped, X86, 62, 1234, 9) == ALLOW  # Landlock's scope decides (ABI 6+)


@pytest.mark.skipif(os.geteuid() == 0, reason="too dangerous to try as root; the non-root CI run covers it")
def test_without_the_signal_scope_kill_minus_one_reaches_nothing_outside(
    tmp_path: Path, kimi_like: subprocess.Popen[bytes]
) -> None:
    """`kill -9 -1` as the user on Ubuntu 24.04 (ABI 4) killed every process of theirs: the session too."""
    sandbox = _sandbox(tmp_path, 4)
    try:
        result = asyncio.run(sandbox.run("kill -9 -1; echo still-here", 60))
        assert "still-here" in result.output and kimi_like.poll() is None
        assert asyncio.run(sandbox.run("echo next", 60)).output.startswith("next")
    finally:
        sandbox.close_sync()
