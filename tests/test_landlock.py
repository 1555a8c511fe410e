"""The landlock backend: the plan is pure and exact; auto picks it when bwrap cannot make namespaces."""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

from kimi_cli.tools.sandbox.landlock_rules import (
    EXECUTE,
    IOCTL_DEV,
    NET_BIND_TCP,
    NET_CONNECT_TCP,
    READ,
    READ_FILE,
    SCOPE_ABSTRACT_UNIX_SOCKET,
    SCOPE_SIGNAL,
    WRITE_FILE,
    Grant,
    fs_rights_for_abi,
    landlock_plan,
    split_around,
)
from kimi_cli.tools.sandbox.landlock_sys import seccomp_program
from kimi_cli.tools.sandbox.policy import HiddenPath, SandboxPolicy

from conftest import result_json, run_kimi, tool_call
from scripted_server import ScriptedModelServer

TREE = {
    "/": ["/bin", "/dev", "/etc", "/home", "/tmp", "/usr"],
    "/home": ["/home/ann"],
    "/home/ann": ["/home/ann/.bashrc", "/home/ann/.config", "/home/ann/.ssh", "/home/ann/code"],
    "/home/ann/.config": ["/home/ann/.config/gcloud", "/home/ann/.config/git"],
}
FILES = {"/home/ann/.bashrc"}
LINKS = {"/bin"}


def plan(network: bool = False, abi: int = 7):  # type: ignore[no-untyped-def]
    policy = SandboxPolicy(
        workspace=Path("/home/ann/code/app"),
        private_tmp=Path("/tmp/kimi-tmp-1"),
        hidden=(HiddenPath(Path("/home/ann/.ssh"), True), HiddenPath(Path("/home/ann/.config/gcloud"), True)),
        network=network,
    )
    return landlock_plan(policy, abi, lambda p: TREE.get(p, []), lambda p: p not in FILES, lambda p: p in LINKS)


def test_the_plan_grants_reads_around_hidden_paths_and_everything_in_the_workspace() -> None:
    everything = fs_rights_for_abi(7)
    assert plan().grants == (
        Grant("/dev", READ | WRITE_FILE | IOCTL_DEV),
        Grant("/etc", READ),
        Grant("/home/ann/.bashrc", EXECUTE | READ_FILE),  # a file: only file rights
        Grant("/home/ann/.config/git", READ),
        Grant("/home/ann/code", READ),
        Grant("/home/ann/code/app", everything),
        Grant("/tmp", READ),
        Grant("/tmp/kimi-tmp-1", everything),
        Grant("/usr", READ),
    )  # /bin is a symlink: never granted; .ssh and .config/gcloud: nothing above them either


def test_the_plan_handles_tcp_and_scopes_by_abi_and_network() -> None:
    assert (plan().handled_net, plan().scoped) == (
        NET_BIND_TCP | NET_CONNECT_TCP,
        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL,
    )
    assert plan(network=True).handled_net == 0
    assert (plan(abi=3).handled_net, plan(abi=3).scoped, plan(abi=3).handled_fs) == (0, 0, fs_rights_for_abi(3))


def test_split_around_a_hidden_root_grants_nothing() -> None:
    assert split_around("/home/ann/.ssh", ["/home/ann/.ssh"], lambda p: []) == []


def decide(program: bytes, arch: int, nr: int, arg0: int = 0) -> int:
    """Run the seccomp BPF program on one syscall, as the kernel would (the few opcodes it uses)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    insns = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
        elif code == 0x15:
            pc += jt if acc == k else jf
        elif code == 0x35:
            pc += jt if acc >= k else jf
        elif code == 0x06:
            return k
        pc += 1


def test_the_seccomp_filter_refuses_inet_sockets_and_session_escapes_only() -> None:
    x86 = 0xC000003E
    prog = seccomp_program("x86_64", block_inet=True).program
    allow, eperm, eacces = 0x7FFF0000, 0x00050001, 0x0005000D
    assert decide(prog, x86, 41, 2) == eacces  # socket(AF_INET)
    assert decide(prog, x86, 41, 10) == eacces  # socket(AF_INET6)
    assert decide(prog, x86, 41, 1) == allow  # socket(AF_UNIX)
    assert decide(prog, x86, 112) == eperm  # setsid
    assert decide(prog, x86, 0) == allow  # read
    assert decide(prog, x86, 0x40000000 + 41, 2) == eperm  # the x32 ABI
    assert decide(prog, 0x40000003, 41, 2) == eperm  # a foreign arch (i386)
    open_net = seccomp_program("x86_64", block_inet=False).program
    assert decide(open_net, x86, 41, 2) == allow and decide(open_net, x86, 112) == eperm


def fake_bwrap(folder: Path) -> Path:
    """A bwrap that fails as it does on Ubuntu 24.04 under AppArmor's userns restriction."""
    folder.mkdir()
    script = folder / "bwrap"
    script.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def test_auto_lands_on_landlock_when_bwrap_cannot_make_namespaces(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    env = {**env, "PATH": f"{fake_bwrap(tmp_path / 'fakebin')}:{os.environ['PATH']}"}
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": f"echo x > {outside}/escaped; echo in > inside.txt"}, "s")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "try", "--output-format", "json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["reason"] == "done"
    assert list(outside.iterdir()) == [] and (repo / "inside.txt").read_text() == "in\n"
    version = run_kimi(["--version"], repo, env)
    assert "sandbox: landlock (bwrap unusable, so Landlock + seccomp" in version.stdout


def test_an_explicit_bwrap_that_cannot_work_says_what_fixes_it(repo: Path, env: dict, tmp_path: Path) -> None:
    env = {**env, "PATH": f"{fake_bwrap(tmp_path / 'fakebin')}:{os.environ['PATH']}", "KIMI_API_KEY": "k",
           "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": "http://127.0.0.1:9/v1"}  # fmt: skip
    proc = run_kimi(["-p", "x", "--sandbox", "bwrap"], repo, env)
    assert proc.returncode == 2
    assert "bubblewrap is installed but may not create user namespaces" in proc.stderr
    assert "--sandbox landlock" in proc.stderr and "install bubblewrap" not in proc.stderr
