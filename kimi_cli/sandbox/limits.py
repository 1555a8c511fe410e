"""What each backend enforces and what it cannot: one table, shown by `/sandbox` and mirrored in docs/sandbox.md."""

from __future__ import annotations

from typing import Any

COMMON = (
    "environment by allowlist; credential-looking values and kimi's key never pass",
    "hidden: the credential stores in hidden_paths.txt and sandbox.hidden_paths, under $HOME, the real home "
    "(the password database's) and where XDG_*_HOME move ~/.config, ~/.local/share, ~/.local/state, ~/.cache",
    "/proc/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus, /proc/fs read-only: no sysctl write, as root too",
    "seccomp: no setuid/setgid bits, no new namespaces, no TIOCSTI, no unix datagram or vsock sockets, no file leases",
    ".git (config, hooks, info/attributes, links) and .kimi checked and put back after every command; a repository "
    "a command makes or changes (nested too) loses the settings, hooks and rebase exec lines that would run a "
    "program; one it cannot read (a lease held on it) is named as not checked and read again after each command",
)
ENFORCES: dict[str, tuple[str, ...]] = {
    "bwrap": (
        "writes only in the workspace and a private /tmp; .git and .kimi mounted read-only",
        "host sockets: /run and /var/run empty, /tmp private, other listening sockets covered",
        "own pid and network namespaces (network off): kimi's pid names nothing; all capabilities dropped",
    ),
    "landlock": (
        "writes only in the workspace and a private tmp (Landlock); reads everywhere but hidden paths",
        "unix sockets: connect() reaches only sockets in the workspace and private tmp (a supervisor decides)",
        "no inet sockets unless the network is allowed; /dev: null, zero, full, random, urandom only",
        "/proc/PID of processes outside the command is closed (Landlock's ptrace rule); no ptrace, "
        "process_vm_*, landlock_* syscalls; no setsid, so nothing leaves the process group that is killed",
        "chmod, chown and timestamps change only files in the workspace and private tmp (the supervisor applies "
        "them, as root too); no xattrs, ACLs or chattr flags",
        "prlimit, priority, scheduler, affinity and I/O priority (renice, chrt, taskset, ionice) only on the "
        "command's own processes (the supervisor decides by process group)",
        "nothing outlives kimi: a kill -9 of kimi takes every command and background task with it",
    ),
    "docker": (
        "only the workspace is mounted (.git and .kimi read-only): no host socket, no home",
        "network none unless allowed; read-only root; capabilities dropped; memory and pids limits",
        "/proc's read-only corners are checked in the container's mount table before the first command",
        "the container dies with kimi (its pid 1 reads a stdin kimi holds open)",
    ),
    "none": (),
}
CANNOT: dict[str, tuple[str, ...]] = {
    "bwrap": (
        "a socket or credential file made outside /run and /tmp while a command runs is covered from the next one",
    ),
    "landlock": (
        "other processes' command lines (/proc/PID/cmdline) are readable, and their limits and priorities too",
        ".git and .kimi are restored after each command, not kept read-only while it runs; git's objects are not "
        "restored (a command can delete history that was never pushed)",
        "abstract unix sockets, POSIX shared memory (/dev/shm, multiprocessing locks) and SysV IPC are unavailable",
        "extended attributes cannot be set even in the workspace; chmod/chown/utime cost ~0.1 ms each",
    ),
    "docker": (
        "runs as the image's user (root in most images); the seccomp profile replaces Docker's default",
        "with the network on, the host's network namespace and its abstract unix sockets are shared",
    ),
    "none": ("no isolation at all: every command needs approval (or --yolo)",),
}


def describe(sandbox: Any) -> list[str]:
    """Lines for `/sandbox`: what this session's backend enforces, then what it cannot."""
    name = getattr(sandbox, "name", "none")
    enforces = list(ENFORCES.get(name, ()))
    cannot = list(CANNOT.get(name, ()))
    policy = getattr(sandbox, "policy", None)
    if name != "none":
        enforces += COMMON
    plan = getattr(sandbox, "plan", None)
    if name == "landlock" and plan is not None and not plan.scoped:
        cannot.append(
            "this kernel's Landlock (ABI < 6) has no signal scope: signals go through the supervisor "
            "(only to the command's own processes), about 0.1 ms each"
        )
    if name == "bwrap" and policy is not None and policy.network and getattr(sandbox, "preexec", None) is None:
        cannot.append("with the network on, the host's abstract unix sockets (X11, some D-Bus) are reachable")
    return [f"  enforces: {line}" for line in enforces] + [f"  cannot:   {line}" for line in cannot]
