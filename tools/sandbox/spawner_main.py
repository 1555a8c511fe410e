"""The landlock spawner: a small helper process that forks sandboxed commands for kimi.

Run as `python -I -S spawner_main.py SOCK_FD RULESET_FD` with the seccomp program on stdin. Forking
from this small process costs ~1 ms where forking kimi itself (~120 MB) costs ~8 ms, and the child
setup (setsid, then no_new_privs, the Landlock domain, the seccomp filter) runs here, between fork and
exec. Requests come as JSON datagrams on a Unix seqpacket socket; each answer carries the command's
pid and, as an SCM_RIGHTS fd, the read end of its output pipe; the exit status follows when it ends.
Standard library only: it starts without site-packages.
"""

import ctypes
import json
import os
import select
import signal
import socket
import struct
import sys

PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
PR_CAPBSET_DROP, PR_SET_SECUREBITS, SECURE_NOROOT_ALL = 24, 28, 0x2F
SYS_LANDLOCK_RESTRICT_SELF = 446
CAPSET = {"x86_64": 126, "aarch64": 91}


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    ruleset_fd = int(sys.argv[2])
    machine = sys.argv[3]
    program = sys.stdin.buffer.read()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buf))
    as_root = os.geteuid() == 0
    cap_header = ctypes.create_string_buffer(struct.pack("=Ii", 0x20080522, 0), 8)
    cap_data = ctypes.create_string_buffer(bytes(24), 24)

    def restrict() -> None:
        if as_root:
            for cap in range(64):
                libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
            libc.prctl(PR_SET_SECUREBITS, SECURE_NOROOT_ALL, 0, 0, 0)
            if libc.syscall(CAPSET.get(machine, -1), cap_header, cap_data) != 0:
                os._exit(126)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            os._exit(126)
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, 0) != 0:
            os._exit(126)
        if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
            os._exit(126)

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    devnull = os.open(os.devnull, os.O_RDONLY)
    running: set[int] = set()
    while True:
        ready, _, _ = select.select([sock.fileno(), wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        if sock.fileno() in ready:
            data = sock.recv(1 << 20)
            if not data:
                return  # kimi is gone: so are we (the commands die with their group, killed by kimi)
            request = json.loads(data)
            out_r, out_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    os.setsid()
                    os.dup2(devnull, 0)
                    os.dup2(out_w, 1)
                    os.dup2(out_w, 2)
                    os.chdir(request["cwd"])
                    restrict()
                    os.closerange(3, 1 << 16)
                    os.execvpe(request["argv"][0], request["argv"], request["env"])
                finally:
                    os._exit(127)
            os.close(out_w)
            socket.send_fds(sock, [json.dumps({"pid": pid}).encode()], [out_r])
            os.close(out_r)
            running.add(pid)
        for pid in list(running):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                running.discard(pid)
                sock.send(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}).encode())


if __name__ == "__main__":
    main()
