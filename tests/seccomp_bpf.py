"""A seccomp BPF evaluator for tests: what the kernel would answer for one syscall under a filter that
kimi_cli.kernel.restrict builds, and the return values and architecture those filters use."""

from __future__ import annotations

import struct


def decide(program: bytes, arch: int, nr: int, *args: int) -> int:
    """Run the seccomp BPF program on one syscall, as the kernel would (the few opcodes it uses)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(list(args) + [0] * 6)[:6])
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
        elif code == 0x45:
            pc += jt if acc & k else jf
        elif code == 0x54:
            acc &= k
        elif code == 0x06:
            return k
        pc += 1


X86 = 0xC000003E  # AUDIT_ARCH_X86_64
# SECCOMP_RET_ALLOW, ERRNO(EPERM), ERRNO(EACCES), ERRNO(ENOSYS), USER_NOTIF
ALLOW, EPERM, EACCES, ENOSYS, NOTIFY = 0x7FFF0000, 0x00050001, 0x0005000D, 0x00050026, 0x7FC00000
