"""A small ctypes layer over Landlock and seccomp: no binding to install, and nothing but syscalls in the child.

Why our own: the PyPI bindings for Landlock cover only part of the ABI (no TCP rules or scopes), and
seccomp bindings need libseccomp's headers to build. What a child needs after fork is three syscalls;
everything else (the ruleset, the BPF program) is prepared in the parent.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from collections.abc import Callable
from dataclasses import dataclass

from kimi_cli.tools.sandbox.landlock_rules import LandlockPlan

SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
PR_CAPBSET_DROP, PR_SET_SECUREBITS = 24, 28
SECURE_NOROOT_ALL = 0x2F  # NOROOT, NOROOT_LOCKED, NO_SETUID_FIXUP, NO_SETUID_FIXUP_LOCKED: root gets nothing on exec
LAST_CAP = 63
CAPSET = {"x86_64": 126, "aarch64": 91}
LINUX_CAPABILITY_VERSION_3 = 0x20080522
O_PATH, O_CLOEXEC, O_NOFOLLOW = 0o10000000, 0o2000000, 0o400000

AF_INET, AF_INET6 = 2, 10
EACCES, EPERM = 13, 1
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06
X32_SYSCALL_BIT = 0x40000000

# Per architecture: the audit arch, socket(), and syscalls a sandboxed command has no business making:
# leaving its session or process group (so a timeout could miss it), and what root could use to get out.
ARCHES: dict[str, dict[str, object]] = {
    "x86_64": {
        "audit": 0xC000003E,
        "socket": 41,
        "deny": {"setsid": 112, "setpgid": 109, "io_uring_setup": 425, "ptrace": 101, "init_module": 175,
                 "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320, "bpf": 321,
                 "perf_event_open": 298, "reboot": 169, "swapon": 167, "swapoff": 168, "unshare": 272,
                 "setns": 308, "pivot_root": 155, "chroot": 161, "keyctl": 250, "add_key": 248,
                 "request_key": 249, "userfaultfd": 323},
    },
    "aarch64": {
        "audit": 0xC00000B7,
        "socket": 198,
        "deny": {"setsid": 157, "setpgid": 154, "io_uring_setup": 425, "ptrace": 117, "init_module": 105,
                 "finit_module": 273, "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294, "bpf": 280,
                 "perf_event_open": 241, "reboot": 142, "swapon": 224, "swapoff": 225, "unshare": 97,
                 "setns": 268, "pivot_root": 41, "chroot": 51, "keyctl": 219, "add_key": 217,
                 "request_key": 218, "userfaultfd": 282},
    },
}  # fmt: skip

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int


class LandlockUnavailable(RuntimeError):
    """This kernel or architecture cannot run the landlock backend; the message says why."""


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is absent or disabled."""
    abi = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return int(abi) if abi > 0 else 0


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockUnavailable(f"{what} failed: {os.strerror(err)}")
    return result


def create_ruleset(plan: LandlockPlan, abi: int) -> int:
    """A ruleset fd holding every grant of the plan (made in the parent, applied in each child)."""
    if abi >= 6:
        attr = struct.pack("=QQQ", plan.handled_fs, plan.handled_net, plan.scoped)
    elif abi >= 4:
        attr = struct.pack("=QQ", plan.handled_fs, plan.handled_net)
    else:
        attr = struct.pack("=Q", plan.handled_fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = _check(
        _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), 0), "landlock_create_ruleset"
    )
    try:
        for grant in plan.grants:
            try:
                parent = os.open(grant.path, O_PATH | O_CLOEXEC | O_NOFOLLOW)  # a link must not grant its target
            except OSError:
                continue  # gone since the plan was made
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", grant.access, parent), 12)
                _check(_libc.syscall(SYS_LANDLOCK_ADD_RULE, fd, RULE_PATH_BENEATH, rule, 0), f"rule for {grant.path}")
            finally:
                os.close(parent)
    except BaseException:
        os.close(fd)
        raise
    return fd


@dataclass(frozen=True)
class Bpf:
    program: bytes  # sock_filter[] as the kernel reads it

    @property
    def length(self) -> int:
        return len(self.program) // 8


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_program(arch: str, block_inet: bool) -> Bpf:
    """The BPF filter: deny inet sockets (unless the network is allowed) and the listed syscalls, allow the rest."""
    spec = ARCHES.get(arch)
    if spec is None:
        raise LandlockUnavailable(f"no seccomp filter for the {arch} architecture")
    deny: list[int] = sorted(dict(spec["deny"]).values())  # type: ignore[call-overload]
    # Instructions as (code, k, jump-true label, jump-false label); labels resolve to relative offsets.
    prog: list[tuple[int, int, str | None, str | None]] = [
        (BPF_LD_W_ABS, 4, None, None),  # seccomp_data.arch
        (BPF_JEQ_K, int(spec["audit"]), "nr", "eperm"),  # type: ignore[call-overload]  # a foreign ABI: refuse
    ]
    labels: dict[str, int] = {"nr": len(prog)}
    prog.append((BPF_LD_W_ABS, 0, None, None))  # seccomp_data.nr
    if arch == "x86_64":
        prog.append((BPF_JGE_K, X32_SYSCALL_BIT, "eperm", None))  # x32 calls bypass the numbers below
    for nr in deny:
        prog.append((BPF_JEQ_K, nr, "eperm", None))
    if block_inet:
        prog.append((BPF_JEQ_K, int(spec["socket"]), None, "allow"))  # type: ignore[call-overload]
        prog.append((BPF_LD_W_ABS, 16, None, None))  # args[0]: the address family
        prog.append((BPF_JEQ_K, AF_INET, "eacces", None))
        prog.append((BPF_JEQ_K, AF_INET6, "eacces", "allow"))
    labels["allow"] = len(prog)
    prog.append((BPF_RET_K, SECCOMP_RET_ALLOW, None, None))
    labels["eperm"] = len(prog)
    prog.append((BPF_RET_K, SECCOMP_RET_ERRNO | EPERM, None, None))
    labels["eacces"] = len(prog)
    prog.append((BPF_RET_K, SECCOMP_RET_ERRNO | EACCES, None, None))

    def offset(pc: int, label: str | None) -> int:
        return 0 if label is None else labels[label] - pc - 1

    return Bpf(b"".join(_insn(code, k, offset(pc, jt), offset(pc, jf)) for pc, (code, k, jt, jf) in enumerate(prog)))


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def make_child_setup(ruleset_fd: int, bpf: Bpf) -> Callable[[], None]:
    """The preexec function: no new privileges, the Landlock domain, then the seccomp filter. Syscalls only."""
    program = ctypes.create_string_buffer(bpf.program, len(bpf.program))
    fprog = _SockFprog(bpf.length, ctypes.addressof(program))
    fprog_ref = ctypes.byref(fprog)
    as_root = os.geteuid() == 0
    capset_nr = CAPSET.get(machine(), -1)
    cap_header = ctypes.create_string_buffer(struct.pack("=Ii", LINUX_CAPABILITY_VERSION_3, 0), 8)
    cap_data = ctypes.create_string_buffer(bytes(24), 24)  # two empty {effective, permitted, inheritable}

    def drop_root_powers() -> None:
        """As root: empty the bounding set, lock root out of exec-time capabilities, clear our own."""
        for cap in range(LAST_CAP + 1):
            _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the kernel's last cap: ignored
        _libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_ALL, 0, 0, 0)
        if _libc.syscall(capset_nr, cap_header, cap_data) != 0:
            raise OSError(ctypes.get_errno(), "capset")

    def setup() -> None:
        if as_root:
            drop_root_powers()
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if _libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, 0) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
        if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog_ref, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")

    setup.keep_alive = (program, fprog, cap_header, cap_data)  # type: ignore[attr-defined]  # the child reads these after fork
    return setup


def machine() -> str:
    return platform.machine()
