"""The one restriction routine for sandboxed commands: Landlock, seccomp and fd hygiene between fork and exec.

Two callers share it: the landlock spawner (spawner_main.py, which runs as `python -I -S` and loads this
file by path) and the preexec path (a child forked by kimi itself: the fallback when no spawner runs,
`spawn_spec`, the start-up probe). So it is standard library only and imports nothing from kimi_cli.
bwrap and Docker take the same seccomp program (`seccomp_program`), written out for them.

What a command gets, in this order (`Restriction.apply`, syscalls only):
1. PR_SET_PDEATHSIG(SIGKILL): it dies with the process that forked it;
2. as root: an empty bounding set, SECURE_NOROOT (exec grants root nothing) and no capabilities;
3. no_new_privs, then the session's Landlock domain;
4. the seccomp filter; when supervised, its listener goes to the supervisor (see supervise.py);
5. every fd above 2 marked close-on-exec: the ruleset, the spawner's sockets, anything of kimi's.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import struct

SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
SYS_CLOSE_RANGE, SYS_PIDFD_GETFD = 436, 438
CLOSE_RANGE_CLOEXEC = 1 << 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_SET_SECUREBITS = 1, 38, 24, 28
SECURE_NOROOT_ALL = 0x2F  # NOROOT, NO_SETUID_FIXUP and both locks
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 1, 1 << 3
O_PATH, O_NOFOLLOW = 0o10000000, 0o400000
RULE_PATH_BENEATH = 1

RET_ALLOW, RET_NOTIFY, RET_ERRNO = 0x7FFF0000, 0x7FC00000, 0x00050000
EPERM, EACCES, ENOSYS = 1, 13, 38
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_SEQPACKET = 1, 5
SETID_BITS = 0o6000
NEW_NAMESPACES = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
X32_SYSCALL_BIT = 0x40000000
EOPNOTSUPP = 95
PRIO_USER, IOPRIO_WHO_USER = 2, 3
F_SETOWN, F_SETOWN_EX, FIOSETOWN, SIOCSPGRP, F_SETLEASE = 8, 15, 0x8901, 0x8902, 1024
# chattr: FS_IOC_SETFLAGS (and its 32-bit twin) and FS_IOC_FSSETXATTR set append-only, no-dump, no-atime...
SETFLAGS_IOCTLS = (0x40086602, 0x40046602, 0x401C5820)

# Syscall numbers by architecture. `deny`: refused with EPERM (ways out of a sandbox, or into the kernel's
# rarer corners; most need capabilities a command never has). `host_ns`: what reaches past a command when
# it shares the host's pid and IPC namespaces (landlock only; bwrap and Docker have their own): leaving
# the process group a timeout kills, and SysV/POSIX IPC objects of the user's other programs.
# `mode_arg`: syscalls whose mode argument (by index) must carry no setuid/setgid bit.
# `meta`: what changes a file's mode, owner or timestamps. Landlock does not mediate them, so on landlock they
# go to the supervisor (supervise_meta.py), which applies them only to files in the workspace and private tmp.
# `xattr`: what sets or removes an extended attribute (POSIX ACLs are one): refused on landlock.
# `others`: the calls that reach another process of the user's without a ptrace check (Landlock's scope
# covers signals only): prlimit64 (a core limit, a CPU limit that kills), and what starves one: setpriority,
# ioprio_set, and the sched_set* calls (SCHED_IDLE, an affinity to one busy CPU).
# `signals`: what sends a signal to a pid, or names one for SIGIO (fcntl F_SETOWN). Below Landlock ABI 6 there
# is no signal scope, so on landlock they go to the supervisor, which lets through only the command's own.
# `truncate`: truncate(2) by path; Landlock handles it from ABI 3 on, below that it is refused.
_COMMON_DENY = {"landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446,
                "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
                "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
                "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442}  # fmt: skip
ARCHES: dict[str, dict[str, object]] = {
    "x86_64": {
        "audit": 0xC000003E, "seccomp": 317, "capset": 126,
        "socket": 41, "socketpair": 53, "connect": 42, "ioctl": 16, "clone": 56, "clone3": 435, "openat2": 437,
        "host_ns": {"setsid": 112, "setpgid": 109, "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64,
                    "semop": 65, "semctl": 66, "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70,
                    "msgctl": 71, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243,
                    "mq_notify": 244, "mq_getsetattr": 245},
        "mode_arg": {"chmod": (90, 1), "fchmod": (91, 1), "fchmodat": (268, 2), "fchmodat2": (452, 2),
                     "open": (2, 2), "openat": (257, 3), "creat": (85, 1), "mknod": (133, 1), "mknodat": (259, 2)},
        "meta": {"chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93,
                 "lchown": 94, "fchownat": 260, "utime": 132, "utimes": 235, "futimesat": 261, "utimensat": 280},
        "xattr": {"setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
                  "fremovexattr": 199, "setxattrat": 463, "removexattrat": 466, "file_setattr": 469},
        "others": {"prlimit64": 302, "setpriority": 141, "ioprio_set": 251, "sched_setparam": 142,
                   "sched_setscheduler": 144, "sched_setaffinity": 203, "sched_setattr": 314},
        "signals": {"kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
                    "pidfd_send_signal": 424, "fcntl": 72},
        "truncate": 76,
        "deny": {**_COMMON_DENY, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
                 "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246,
                 "kexec_file_load": 320, "bpf": 321, "perf_event_open": 298, "reboot": 169, "swapon": 167,
                 "swapoff": 168, "unshare": 272, "setns": 308, "pivot_root": 155, "chroot": 161, "mount": 165,
                 "umount2": 166, "keyctl": 250, "add_key": 248, "request_key": 249, "userfaultfd": 323,
                 "name_to_handle_at": 303, "open_by_handle_at": 304, "acct": 163, "quotactl": 179, "syslog": 103,
                 "vhangup": 153, "iopl": 172, "ioperm": 173, "uselib": 134, "lookup_dcookie": 212},
    },
    "aarch64": {
        "audit": 0xC00000B7, "seccomp": 277, "capset": 91,
        "socket": 198, "socketpair": 199, "connect": 203, "ioctl": 29, "clone": 220, "clone3": 435, "openat2": 437,
        "host_ns": {"setsid": 157, "setpgid": 154, "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182,
                    "mq_timedreceive": 183, "mq_notify": 184, "mq_getsetattr": 185, "msgget": 186, "msgctl": 187,
                    "msgrcv": 188, "msgsnd": 189, "semget": 190, "semctl": 191, "semtimedop": 192, "semop": 193,
                    "shmget": 194, "shmctl": 195, "shmat": 196},
        "mode_arg": {"fchmod": (52, 1), "fchmodat": (53, 2), "fchmodat2": (452, 2), "openat": (56, 3),
                     "mknodat": (33, 2)},
        "meta": {"fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchownat": 54, "fchown": 55, "utimensat": 88},
        "xattr": {"setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15,
                  "fremovexattr": 16, "setxattrat": 463, "removexattrat": 466, "file_setattr": 469},
        "others": {"prlimit64": 261, "setpriority": 140, "ioprio_set": 30, "sched_setparam": 118,
                   "sched_setscheduler": 119, "sched_setaffinity": 122, "sched_setattr": 274},
        "signals": {"kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
                    "pidfd_send_signal": 424, "fcntl": 25},
        "truncate": 45,
        "deny": {**_COMMON_DENY, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
                 "init_module": 105, "finit_module": 273, "delete_module": 106, "kexec_load": 104,
                 "kexec_file_load": 294, "bpf": 280, "perf_event_open": 241, "reboot": 142, "swapon": 224,
                 "swapoff": 225, "unshare": 97, "setns": 268, "pivot_root": 41, "chroot": 51, "mount": 40,
                 "umount2": 39, "keyctl": 219, "add_key": 217, "request_key": 218, "userfaultfd": 282,
                 "name_to_handle_at": 264, "open_by_handle_at": 265, "acct": 89, "quotactl": 60, "syslog": 116,
                 "vhangup": 58, "lookup_dcookie": 18},
    },
}  # fmt: skip

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int


class Unavailable(RuntimeError):
    """This kernel or architecture cannot run the landlock backend; the message says why."""


def machine() -> str:
    return os.uname().machine  # what platform.machine() returns, without importing platform


def arch_spec(arch: str) -> dict[str, object]:
    spec = ARCHES.get(arch)
    if spec is None:
        raise Unavailable(f"no seccomp filter for the {arch} architecture")
    return spec


# --- seccomp ---------------------------------------------------------------------------------------------

LD_W_ABS, JEQ_K, JGE_K, JSET_K, AND_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06


def _arg(index: int) -> int:
    """Offset of the low 32 bits of syscall argument `index` in seccomp_data (little-endian)."""
    return 16 + 8 * index


def seccomp_program(
    arch: str,
    *,
    network: bool,
    connect: str = "allow",
    host_ns: bool = True,
    metadata: str = "allow",
    signals: str = "allow",
    truncate: bool = True,
) -> bytes:
    """The BPF filter every backend shares. `connect`: "notify" (a supervisor decides), "deny" or "allow".

    Always: the deny list; no setuid/setgid bit in any mode argument; no new namespaces (clone flags;
    clone3 and openat2 answer ENOSYS so libc falls back to the filterable calls); no TIOCSTI/TIOCLINUX;
    sockets only of the families a build needs (unix stream/seqpacket and netlink, plus inet with the
    network on: a unix datagram could reach syslog or journald, and sendmsg's address is out of reach).
    `host_ns` (landlock: no pid or IPC namespace of its own, the host's files only read-only by Landlock):
    also refuse setsid/setpgid, so nothing leaves the process group that is killed; SysV/POSIX IPC, so no
    shared memory or queue of the host's; prlimit64 on another process (a core limit makes kimi dump its
    memory, the API key with it, and a CPU limit kills it), setpriority/ioprio_set of all the user's
    processes, and the priority, I/O priority, scheduler or affinity of another process (pid 0 passes,
    another pid goes where prlimit64's does: to the supervisor, or refused); extended attributes (POSIX
    ACLs) and chattr flags. `metadata` (host_ns only) is what happens to chmod/chown/utime calls: "notify"
    (the supervisor applies them inside the workspace only), "deny" (refused: root without a supervisor,
    where they would reach every file of the host) or "allow".
    `signals` (host_ns, a Landlock without the signal scope of ABI 6): "notify" (kill/tgkill/... of any pid
    but the caller's own group, and F_SETOWN, go to the supervisor), "deny" (only pid 0, the caller's own
    group, may be signalled) or "allow". `truncate=False` (Landlock ABI < 3) sends truncate(2) by path where
    `metadata` goes (the supervisor applies it inside the workspace only), or refuses it.
    """
    spec = arch_spec(arch)
    deny = sorted(dict(spec["deny"]).values())  # type: ignore[call-overload]
    meta: dict[str, int] = dict(spec["meta"]) if host_ns and metadata != "allow" else {}  # type: ignore[call-overload]
    if host_ns:
        deny += sorted(dict(spec["host_ns"]).values())  # type: ignore[call-overload]
    others: dict[str, int] = dict(spec["others"]) if host_ns else {}  # type: ignore[call-overload]
    prog: list[tuple[int, int, str | None, str | None]] = [
        (LD_W_ABS, 4, None, None),  # seccomp_data.arch
        (JEQ_K, int(spec["audit"]), "nr", "eperm"),  # type: ignore[call-overload]  # a foreign ABI: refuse
    ]
    labels: dict[str, int] = {"nr": len(prog)}
    prog.append((LD_W_ABS, 0, None, None))  # seccomp_data.nr
    if arch == "x86_64":
        prog.append((JGE_K, X32_SYSCALL_BIT, "eperm", None))  # x32 calls would bypass the numbers below
    for nr in deny:
        prog.append((JEQ_K, nr, "eperm", None))
    if host_ns and not truncate:  # Landlock below ABI 3 does not handle it: the supervisor checks the path
        prog.append((JEQ_K, int(spec["truncate"]), "notify" if metadata == "notify" else "eperm", None))  # type: ignore[call-overload]
    sig: dict[str, int] = dict(spec["signals"]) if host_ns and signals != "allow" else {}  # type: ignore[call-overload]
    sig_other = "notify" if signals == "notify" else "eperm"
    if sig:
        prog.append((JEQ_K, sig["kill"], "sig_pid", None))
        prog.append((JEQ_K, sig["rt_sigqueueinfo"], "sig_pid", None))
        for name in ("tkill", "tgkill", "rt_tgsigqueueinfo", "pidfd_send_signal"):
            prog.append((JEQ_K, sig[name], sig_other, None))
    # fcntl: F_SETLEASE always (a lease on a workspace file stalls every blocking open of it, host git's and the
    # user's, 45 s each: a background task held kimi's Git tool for minutes); F_SETOWN too where signals are checked
    prog.append((JEQ_K, int(dict(spec["signals"])["fcntl"]), "fcntl", None))  # type: ignore[call-overload]
    if host_ns:
        for nr in sorted(dict(spec["xattr"]).values()):  # type: ignore[call-overload]
            prog.append((JEQ_K, nr, "eopnotsupp", None))
        prog.append((JEQ_K, others["prlimit64"], "prlimit", None))
        prog.append((JEQ_K, others["setpriority"], "prio", None))
        prog.append((JEQ_K, others["ioprio_set"], "ioprio", None))
        for name in ("sched_setparam", "sched_setscheduler", "sched_setaffinity", "sched_setattr"):
            prog.append((JEQ_K, others[name], "sched", None))
    for name in ("clone3", "openat2"):
        prog.append((JEQ_K, int(spec[name]), "enosys", None))  # type: ignore[call-overload]
    prog.append((JEQ_K, int(spec["socket"]), "socket", None))  # type: ignore[call-overload]
    prog.append((JEQ_K, int(spec["socketpair"]), "socketpair", None))  # type: ignore[call-overload]
    if connect != "allow":
        prog.append((JEQ_K, int(spec["connect"]), "notify" if connect == "notify" else "eacces", None))  # type: ignore[call-overload]
    prog.append((JEQ_K, int(spec["ioctl"]), "ioctl", None))  # type: ignore[call-overload]
    prog.append((JEQ_K, int(spec["clone"]), "clone", None))  # type: ignore[call-overload]
    meta_action = "notify" if metadata == "notify" else "eperm"
    by_index: dict[str, list[int]] = {}  # mode checks, by argument index and by what follows a clean mode
    for name, (nr, index) in dict(spec["mode_arg"]).items():  # type: ignore[call-overload]
        by_index.setdefault(f"mode{index}" + ("_meta" if name in meta else ""), []).append(nr)
    for label in sorted(by_index):
        for nr in sorted(by_index[label]):
            prog.append((JEQ_K, nr, label, None))
    for nr in sorted(nr for name, nr in meta.items() if name not in dict(spec["mode_arg"])):  # type: ignore[call-overload]
        prog.append((JEQ_K, nr, meta_action, None))  # chown and utime: no mode to check first
    prog.append((RET_K, RET_ALLOW, None, None))
    for label in sorted(by_index):
        labels[label] = len(prog)
        prog.append((LD_W_ABS, _arg(int(label[4:].split("_")[0])), None, None))
        prog.append((JSET_K, SETID_BITS, "eperm", meta_action if label.endswith("_meta") else "allow"))
    labels["ioctl"] = len(prog)
    prog.append((LD_W_ABS, _arg(1), None, None))
    prog.append((JEQ_K, TIOCSTI, "eperm", None))
    if host_ns:
        for request in SETFLAGS_IOCTLS:  # chattr reaches files Landlock lets a command only read
            prog.append((JEQ_K, request, "eperm", None))
    if sig:
        for request in (FIOSETOWN, SIOCSPGRP):  # SIGIO/SIGURG to a pid read from memory: no scope to check it
            prog.append((JEQ_K, request, "eperm", None))
    prog.append((JEQ_K, TIOCLINUX, "eperm", "allow"))
    if sig:
        labels["sig_pid"] = len(prog)  # kill(pid, sig): 0 is the caller's own group, -1 everyone it may signal
        prog.append((LD_W_ABS, _arg(0), None, None))
        prog.append((JEQ_K, 0, "allow", None))
        prog.append((JEQ_K, 0xFFFFFFFF, "eperm", sig_other))
    labels["fcntl"] = len(prog)  # F_SETOWN: SIGIO to a pid (register: checkable); F_SETOWN_EX: in memory
    prog.append((LD_W_ABS, _arg(1), None, None))
    prog.append((JEQ_K, F_SETLEASE, "eperm", None if sig else "allow"))
    if sig:
        prog.append((JEQ_K, F_SETOWN_EX, "eperm", None))
        prog.append((JEQ_K, F_SETOWN, None, "allow"))
        prog.append((LD_W_ABS, _arg(2), None, None))
        prog.append((JEQ_K, 0, "allow", sig_other))
    if host_ns:
        # prlimit64(pid, resource, new, old): itself (0) or only reading; another pid (psutil passes its own)
        # goes to the supervisor, which lets it run only on a process of the same command (see supervise.py)
        other = "notify" if connect == "notify" else "eperm"
        labels["prlimit"] = len(prog)
        prog.append((LD_W_ABS, _arg(0), None, None))
        prog.append((JEQ_K, 0, "allow", None))
        prog.append((LD_W_ABS, _arg(2), None, None))
        prog.append((JEQ_K, 0, None, other))
        prog.append((LD_W_ABS, _arg(2) + 4, None, None))
        prog.append((JEQ_K, 0, "allow", other))
        # setpriority(which, who, prio), ioprio_set(which, who, ioprio): never the USER kind (every process of
        # the user); who 0 is the caller itself or its own group; another who goes where prlimit64's does.
        labels["prio"] = len(prog)
        prog.append((LD_W_ABS, _arg(0), None, None))
        prog.append((JEQ_K, PRIO_USER, "eperm", "who"))
        labels["ioprio"] = len(prog)
        prog.append((LD_W_ABS, _arg(0), None, None))
        prog.append((JEQ_K, IOPRIO_WHO_USER, "eperm", "who"))
        labels["who"] = len(prog)
        prog.append((LD_W_ABS, _arg(1), None, None))
        prog.append((JEQ_K, 0, "allow", other))
        labels["sched"] = len(prog)  # sched_set*(pid, ...): 0 is the calling thread
        prog.append((LD_W_ABS, _arg(0), None, None))
        prog.append((JEQ_K, 0, "allow", other))
    labels["clone"] = len(prog)
    prog.append((LD_W_ABS, _arg(0), None, None))
    prog.append((JSET_K, NEW_NAMESPACES, "eperm", "allow"))
    labels["socket"] = len(prog)
    prog.append((LD_W_ABS, _arg(0), None, None))
    prog.append((JEQ_K, AF_UNIX, "unix_type", None))
    if network:
        prog.append((JEQ_K, AF_INET, "allow", None))
        prog.append((JEQ_K, AF_INET6, "allow", None))
    prog.append((JEQ_K, AF_NETLINK, "allow", "eacces"))
    labels["socketpair"] = len(prog)
    prog.append((LD_W_ABS, _arg(0), None, None))
    prog.append((JEQ_K, AF_UNIX, "unix_type", "eacces"))
    labels["unix_type"] = len(prog)
    prog.append((LD_W_ABS, _arg(1), None, None))
    prog.append((AND_K, 0xF, None, None))  # the type without SOCK_CLOEXEC / SOCK_NONBLOCK
    prog.append((JEQ_K, SOCK_STREAM, "allow", None))
    prog.append((JEQ_K, SOCK_SEQPACKET, "allow", "eacces"))
    labels["allow"] = len(prog)
    prog.append((RET_K, RET_ALLOW, None, None))
    labels["eperm"] = len(prog)
    prog.append((RET_K, RET_ERRNO | EPERM, None, None))
    labels["eacces"] = len(prog)
    prog.append((RET_K, RET_ERRNO | EACCES, None, None))
    labels["enosys"] = len(prog)
    prog.append((RET_K, RET_ERRNO | ENOSYS, None, None))
    labels["eopnotsupp"] = len(prog)
    prog.append((RET_K, RET_ERRNO | EOPNOTSUPP, None, None))
    labels["notify"] = len(prog)
    prog.append((RET_K, RET_NOTIFY, None, None))

    def offset(pc: int, label: str | None) -> int:
        if label is None:
            return 0
        jump = labels[label] - pc - 1
        if not 0 <= jump < 256:
            raise AssertionError(f"BPF jump to {label} out of range")
        return jump

    return b"".join(
        struct.pack("=HBBI", code, offset(pc, jt), offset(pc, jf), k) for pc, (code, k, jt, jf) in enumerate(prog)
    )


def docker_seccomp_profile(arch: str) -> str:
    """The same rules as Docker's JSON seccomp profile (Docker's namespaces make `host_ns` moot)."""
    import json  # kimi's side only: the spawner never calls this

    spec = arch_spec(arch)
    errno_rule = {"action": "SCMP_ACT_ERRNO", "errnoRet": EPERM}
    rules: list[dict[str, object]] = [
        {"names": sorted(dict(spec["deny"])), **errno_rule},  # type: ignore[call-overload]
        {"names": ["clone3", "openat2"], "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS},
    ]

    def masked(index: int, bit: int, value: int | None = None) -> dict[str, object]:
        return {"index": index, "value": bit, "valueTwo": bit if value is None else value, "op": "SCMP_CMP_MASKED_EQ"}

    for name, (_nr, index) in dict(spec["mode_arg"]).items():  # type: ignore[call-overload]
        for bit in (0o4000, 0o2000):
            rules.append({"names": [name], **errno_rule, "args": [masked(index, bit)]})
    for request in (TIOCSTI, TIOCLINUX):
        rules.append({"names": ["ioctl"], **errno_rule, "args": [{"index": 1, "value": request, "op": "SCMP_CMP_EQ"}]})
    for bit in range(32):
        if NEW_NAMESPACES & (1 << bit):
            rules.append({"names": ["clone"], **errno_rule, "args": [masked(0, 1 << bit)]})
    unix = {"index": 0, "value": AF_UNIX, "op": "SCMP_CMP_EQ"}
    for sock_type in (2, 3):  # SOCK_DGRAM, SOCK_RAW (a datagram socket for AF_UNIX)
        for name in ("socket", "socketpair"):
            rules.append({"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": EACCES,
                          "args": [unix, masked(1, 0xF, sock_type)]})  # fmt: skip
    rules.append({"names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": EACCES,
                  "args": [{"index": 0, "value": 40, "op": "SCMP_CMP_EQ"}]})  # fmt: skip  # AF_VSOCK: the hypervisor
    native = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}[arch]
    return json.dumps({"defaultAction": "SCMP_ACT_ALLOW", "architectures": [native], "syscalls": rules})


# --- Landlock --------------------------------------------------------------------------------------------


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is absent or disabled."""
    abi = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), 1)
    return int(abi) if abi > 0 else 0


def _check(result: int, what: str) -> int:
    if result < 0:
        raise Unavailable(f"{what} failed: {os.strerror(ctypes.get_errno())}")
    return result


def create_ruleset(abi: int, handled_fs: int, handled_net: int, scoped: int, grants: list[tuple[str, int]]) -> int:
    """A ruleset fd (always close-on-exec) holding every grant; made once, applied in each child."""
    if abi >= 6:
        attr = struct.pack("=QQQ", handled_fs, handled_net, scoped)
    elif abi >= 4:
        attr = struct.pack("=QQ", handled_fs, handled_net)
    else:
        attr = struct.pack("=Q", handled_fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = _check(_libc.syscall(SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), 0), "landlock ruleset")
    try:
        for path, access in grants:
            try:
                parent = os.open(path, O_PATH | os.O_CLOEXEC | O_NOFOLLOW)  # a link must not grant its target
            except OSError:
                continue  # gone since the plan was made
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", access, parent), 12)
                _check(_libc.syscall(SYS_LANDLOCK_ADD_RULE, fd, RULE_PATH_BENEATH, rule, 0), f"rule for {path}")
            finally:
                os.close(parent)
    except BaseException:
        os.close(fd)
        raise
    return fd


# --- the routine -----------------------------------------------------------------------------------------


def enter_domain(ruleset_fd: int) -> None:
    """no_new_privs, then the Landlock domain: all a scope-only caller needs (bwrap with the network on)."""
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if _libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Restriction:
    """Everything a child needs, prepared in the parent; `apply` runs between fork and exec.

    `supervised` is the program whose connect() a supervisor answers; `plain` is used when there is no
    supervisor (the preexec path) or the kernel refuses a listener: there connect() is refused outright.
    """

    def __init__(self, ruleset_fd: int, supervised: bytes | None, plain: bytes, arch: str | None = None) -> None:
        spec = arch_spec(arch or machine())
        self.ruleset_fd = ruleset_fd
        self.seccomp_nr = int(spec["seccomp"])  # type: ignore[call-overload]
        self.capset_nr = int(spec["capset"])  # type: ignore[call-overload]
        self.as_root = os.geteuid() == 0
        self._programs: list[tuple[ctypes.Array[ctypes.c_char], _SockFprog] | None] = []
        for program in (supervised, plain):
            if program is None:
                self._programs.append(None)
                continue
            buf = ctypes.create_string_buffer(program, len(program))
            self._programs.append((buf, _SockFprog(len(program) // 8, ctypes.addressof(buf))))
        self._cap_header = ctypes.create_string_buffer(struct.pack("=Ii", LINUX_CAPABILITY_VERSION_3, 0), 8)
        self._cap_data = ctypes.create_string_buffer(bytes(24), 24)  # two empty {effective, permitted, inheritable}

    def apply(self, parent_pid: int, notify: socket.socket | None = None) -> None:
        """Restrict the calling (child) process; raises OSError, and the caller must not exec then."""
        if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent_pid:
            raise OSError(EPERM, "the parent is gone")
        if self.as_root:
            for cap in range(64):
                _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the kernel's last cap: ignored
            _libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_ALL, 0, 0, 0)
            if _libc.syscall(self.capset_nr, self._cap_header, self._cap_data) != 0:
                raise OSError(ctypes.get_errno(), "capset")
        enter_domain(self.ruleset_fd)
        supervised = self._programs[0]
        listener = -1
        if notify is not None and supervised is not None:
            listener = _libc.syscall(
                self.seccomp_nr, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, ctypes.byref(supervised[1])
            )
        if listener >= 0:
            try:
                socket.send_fds(notify, [b"L"], [listener])  # type: ignore[arg-type]
            finally:
                os.close(listener)
        else:  # no supervisor, or a listener already exists up the chain (EBUSY): connect() is refused
            plain = self._programs[1]
            assert plain is not None
            if _libc.syscall(self.seccomp_nr, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(plain[1])) != 0:
                raise OSError(ctypes.get_errno(), "seccomp")
        mark_fds_cloexec()


def mark_fds_cloexec() -> None:
    """Every fd above stderr closes at exec (marked, not closed: subprocess still needs its error pipe)."""
    if _libc.syscall(SYS_CLOSE_RANGE, 3, ctypes.c_uint(0xFFFFFFFF), CLOSE_RANGE_CLOEXEC) == 0:
        return
    for name in os.listdir("/proc/self/fd"):  # before Linux 5.11
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):  # the listing's own fd, closed by now
                os.set_inheritable(fd, False)
