"""The landlock backend: the plan is pure and exact; auto picks it when bwrap cannot make namespaces."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kimi_cli.kernel.restrict import seccomp_program
from kimi_cli.kernel.rights import (
    EXECUTE,
    IOCTL_DEV,
    NET_BIND_TCP,
    NET_CONNECT_TCP,
    READ,
    READ_DIR,
    READ_FILE,
    SCOPE_ABSTRACT_UNIX_SOCKET,
    SCOPE_SIGNAL,
    WRITE_FILE,
    fs_rights_for_abi,
)
from kimi_cli.sandbox.backends.landlock.rules import DEVICES, Grant, landlock_plan, split_around
from kimi_cli.sandbox.policy import HiddenPath, SandboxPolicy

from scripted_server import ScriptedModelServer
from seccomp_bpf import ALLOW, EACCES, ENOSYS, EPERM, NOTIFY, X86, decide
from support import result_json, run_kimi, tool_call

TREE = {
    "/": ["/bin", "/dev", "/etc", "/home", "/tmp", "/usr"],
    "/home": ["/home/ann"],
    "/home/ann": ["/home/ann/.bashrc", "/home/ann/.config", "/home/ann/.ssh", "/home/ann/code"],
    "/home/ann/.config": ["/home/ann/.config/gcloud", "/home/ann/.config/git"],
}
FILES = {"/home/ann/.bashrc", *DEVICES}
LINKS = {"/bin"}


def plan(network: bool = False, abi: int = 7, hidden: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    policy = SandboxPolicy(
        workspace=Path("/home/ann/code/app"),
        private_tmp=Path("/tmp/kimi-tmp-1"),
        hidden=(HiddenPath(Path("/home/ann/.ssh"), True), HiddenPath(Path("/home/ann/.config/gcloud"), True),
                *(HiddenPath(Path(h), True) for h in hidden)),
        network=network,
    )  # fmt: skip
    return landlock_plan(policy, abi, lambda p: TREE.get(p, []), lambda p: p not in FILES, lambda p: p in LINKS)


def test_the_plan_grants_reads_around_hidden_paths_and_everything_in_the_workspace() -> None:
    everything = fs_rights_for_abi(7)
    device = READ_FILE | WRITE_FILE | IOCTL_DEV
    assert plan().grants == (
        Grant("/dev", READ_DIR),  # listed, never read: no tty, no /dev/shm
        *(Grant(path, device) for path in sorted(DEVICES)),  # what builds open (test below: no tty, no memory)
        Grant("/etc", READ),
        Grant("/home/ann/.bashrc", EXECUTE | READ_FILE),  # a file: only file rights
        Grant("/home/ann/.config/git", READ),
        Grant("/home/ann/code", READ),
        Grant("/home/ann/code/app", everything),
        Grant("/tmp", READ),
        Grant("/tmp/kimi-tmp-1", everything),
        Grant("/usr", READ),
    )  # /bin is a symlink: never granted; .ssh and .config/gcloud: nothing above them either


def test_the_devices_granted_are_no_terminal_and_no_memory() -> None:
    """The devices the plan grants (rules.DEVICES) are character devices that neither read the user's keystrokes
    (a tty) nor reach the machine's memory or ports (/dev/mem, /dev/kmem, /dev/port: major 1, minors 1, 2, 4)."""
    assert DEVICES and "/dev" not in DEVICES
    for path in DEVICES:
        info = os.stat(path)
        assert stat.S_ISCHR(info.st_mode), path
        assert (os.major(info.st_rdev), os.minor(info.st_rdev)) not in {(1, 1), (1, 2), (1, 4)}, path
        assert os.major(info.st_rdev) not in (4, 5) and not 136 <= os.major(info.st_rdev) <= 143, path  # ttys, ptys
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            assert not os.isatty(fd), path
        finally:
            os.close(fd)


def test_a_hidden_path_inside_the_workspace_stays_hidden_there() -> None:
    global TREE
    saved = TREE
    TREE = {**TREE, "/home/ann/code/app": ["/home/ann/code/app/.ssh", "/home/ann/code/app/src"]}
    try:
        grants = {g.path for g in plan(hidden=("/home/ann/code/app/.ssh",)).grants}
    finally:
        TREE = saved
    assert "/home/ann/code/app/src" in grants and "/home/ann/code/app" not in grants
    assert not any(g.startswith("/home/ann/code/app/.ssh") for g in grants)


def test_the_plan_handles_tcp_and_scopes_by_abi_and_network() -> None:
    assert (plan().handled_net, plan().scoped) == (
        NET_BIND_TCP | NET_CONNECT_TCP,
        SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL,
    )
    assert plan(network=True).handled_net == 0
    assert (plan(abi=3).handled_net, plan(abi=3).scoped, plan(abi=3).handled_fs) == (0, 0, fs_rights_for_abi(3))


def test_split_around_a_hidden_root_grants_nothing() -> None:
    assert split_around("/home/ann/.ssh", ["/home/ann/.ssh"], lambda p: []) == []


def test_the_seccomp_filter_refuses_inet_sockets_and_session_escapes() -> None:
    prog = seccomp_program("x86_64", network=False)
    assert decide(prog, X86, 41, 2) == EACCES  # socket(AF_INET)
    assert decide(prog, X86, 41, 10) == EACCES  # socket(AF_INET6)
    assert decide(prog, X86, 41, 1, 1) == ALLOW  # socket(AF_UNIX, SOCK_STREAM)
    assert decide(prog, X86, 112) == EPERM  # setsid
    assert decide(prog, X86, 0) == ALLOW  # read
    assert decide(prog, X86, 0x40000000 + 41, 2) == EPERM  # the x32 ABI
    assert decide(prog, 0x40000003, 41, 2) == EPERM  # a foreign arch (i386)
    open_net = seccomp_program("x86_64", network=True)
    assert decide(open_net, X86, 41, 2) == ALLOW and decide(open_net, X86, 112) == EPERM
    assert decide(seccomp_program("x86_64", network=False, host_ns=False), X86, 112) == ALLOW  # bwrap: a pid ns


def test_the_seccomp_filter_closes_what_landlock_leaves_open() -> None:
    prog = seccomp_program("x86_64", network=False, connect="notify")
    for nr in (444, 445, 446, 101, 310, 311, 438):  # landlock_*, ptrace, process_vm_readv/writev, pidfd_getfd
        assert decide(prog, X86, nr) == EPERM, nr
    assert decide(prog, X86, 42) == NOTIFY  # connect: the supervisor decides
    assert decide(seccomp_program("x86_64", network=False, connect="deny"), X86, 42) == EACCES
    assert decide(seccomp_program("x86_64", network=True), X86, 42) == ALLOW
    # setuid/setgid bits: chmod(path, mode), fchmodat(dirfd, path, mode), openat(dirfd, path, flags, mode)
    assert decide(prog, X86, 90, 0, 0o4755) == EPERM and decide(prog, X86, 90, 0, 0o2755) == EPERM
    assert decide(prog, X86, 90, 0, 0o755) == ALLOW
    assert decide(prog, X86, 268, 0, 0, 0o6777) == EPERM and decide(prog, X86, 268, 0, 0, 0o777) == ALLOW
    assert decide(prog, X86, 257, 0, 0, 0o101, 0o4755) == EPERM and decide(prog, X86, 257, 0, 0, 0o101, 0o644) == ALLOW
    assert decide(prog, X86, 437) == ENOSYS and decide(prog, X86, 435) == ENOSYS  # openat2, clone3: libc falls back
    assert decide(prog, X86, 56, 0x10000000) == EPERM  # clone(CLONE_NEWUSER)
    assert decide(prog, X86, 56, 0x01200011) == ALLOW  # clone as fork does it
    assert decide(prog, X86, 16, 0, 0x5412) == EPERM and decide(prog, X86, 16, 0, 0x5401) == ALLOW  # TIOCSTI; TCGETS
    assert decide(prog, X86, 41, 1, 2) == EACCES and decide(prog, X86, 41, 1, 0x80002) == EACCES  # unix datagrams
    assert decide(prog, X86, 53, 1, 2) == EACCES and decide(prog, X86, 53, 1, 1) == ALLOW  # socketpair
    assert decide(prog, X86, 41, 40, 1) == EACCES  # AF_VSOCK: the hypervisor


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
    version = run_kimi(["doctor"], repo, env)
    assert "sandbox: landlock (bwrap unusable, so Landlock + seccomp" in version.stdout


def test_an_explicit_bwrap_that_cannot_work_says_what_fixes_it(repo: Path, env: dict, tmp_path: Path) -> None:
    env = {**env, "PATH": f"{fake_bwrap(tmp_path / 'fakebin')}:{os.environ['PATH']}", "KIMI_API_KEY": "k",
           "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": "http://127.0.0.1:9/v1"}  # fmt: skip
    proc = run_kimi(["-p", "x", "--sandbox", "bwrap"], repo, env)
    assert proc.returncode == 2
    assert "bubblewrap is installed but may not create user namespaces" in proc.stderr
    assert "--sandbox landlock" in proc.stderr and "install bubblewrap" not in proc.stderr
