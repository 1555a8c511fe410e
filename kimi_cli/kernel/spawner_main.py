"""The landlock spawner: a small helper process that forks sandboxed commands for kimi and supervises them.

Run as `python -I -S spawner_main.py SOCK_FD RULESET_FD KIMI_PID` with a JSON config on stdin. Forking
from this small process costs ~1 ms where forking kimi itself (~120 MB) costs ~8 ms. Each child runs
setsid and then the one restriction routine (restrict.py, loaded from this folder as a package of its own:
`-I` keeps the folder itself off sys.path) between fork and exec. Requests come as JSON datagrams on a Unix seqpacket
socket; each answer carries the command's pid and, as an SCM_RIGHTS fd, the read end of its output pipe;
the exit status follows when it ends. The connect() supervisor (supervise.py) runs in the same loop.

Nothing outlives kimi: this process gets SIGTERM when kimi dies (PR_SET_PDEATHSIG) and sees kimi's
socket close; either way it kills every command's process group (commands cannot leave it: seccomp
refuses setsid/setpgid) and exits. It is a child subreaper, so what a command orphans stays ours.
Standard library only: it starts without site-packages.
"""

import contextlib
import ctypes
import importlib
import json
import os
import select
import signal
import socket
import sys
import types

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
PACKAGE = "kimi_sandbox"  # this folder's modules, as the spawner imports them


def load(name: str):
    """A module of this folder, as a submodule of a package that holds only this folder: their imports of one
    another (`from .contain import ...`) work here as they do as kimi_cli.kernel, and nothing else is found."""
    if PACKAGE not in sys.modules:
        package = types.ModuleType(PACKAGE)
        package.__path__ = [os.path.dirname(os.path.abspath(__file__))]
        sys.modules[PACKAGE] = package
    return importlib.import_module(f"{PACKAGE}.{name}")


class Spawner:
    def __init__(self, sock: socket.socket, ruleset_fd: int, config: dict) -> None:
        restrict, supervise, meta = load("restrict"), load("supervise"), load("supervise_meta")
        arch = restrict.machine()
        network, hidden = config["network"], config.get("hidden", [])
        scoped, truncate = config.get("signal_scope", True), config.get("abi", 3) >= 3
        supervised = restrict.seccomp_program(arch, network=network, connect="notify", metadata="notify",
                                              signals="allow" if scoped else "notify", truncate=truncate)  # fmt: skip
        plain = restrict.seccomp_program(arch, network=network, connect="deny", metadata=plain_metadata(),
                                         signals="allow" if scoped else "deny", truncate=truncate)  # fmt: skip
        self.restriction = restrict.Restriction(ruleset_fd, supervised, plain, arch)
        spec = restrict.arch_spec(arch)
        names = {nr: name for name, nr in spec["meta"].items()}
        if not truncate:
            names[spec["truncate"]] = "truncate"
        self.sock = sock
        self.me = os.getpid()
        self.running: set[int] = set()
        self.groups: set[int] = set()  # every command's process group: members may outlive the command
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.intake, self.intake_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # listeners
        self.devnull = os.open(os.devnull, os.O_RDONLY)
        self.poller = select.poll()
        for fd in (sock.fileno(), self.wake_r, self.intake.fileno()):
            self.poller.register(fd, select.POLLIN)
        calls = meta.MetaCalls(names, config["roots"], hidden, supervise.thread_pidfd, supervise.as_seen_by)
        on_process = {nr: name for name, nr in spec["others"].items()}  # prlimit64, setpriority, sched_set*...
        signals = {} if scoped else {nr: name for name, nr in spec["signals"].items()}
        self.supervisor = supervise.Supervisor(
            self.poller, config["roots"], network, hidden, calls, on_process, signals
        )

    def shutdown(self, *_: object) -> None:
        for pid in self.groups:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        os._exit(0)

    def serve(self) -> None:
        while True:
            try:
                events = self.poller.poll(self.supervisor.timeout_ms())
            except InterruptedError:
                continue
            for fd, mask in events:
                if fd == self.sock.fileno():
                    data = self.sock.recv(1 << 20)
                    if not data:
                        return  # kimi is gone: so is everything it started
                    self.start(json.loads(data))
                elif fd == self.wake_r:
                    os.read(self.wake_r, 4096)
                elif fd == self.intake.fileno():
                    _, fds, _, _ = socket.recv_fds(self.intake, 16, 4)
                    for listener in fds:
                        self.supervisor.add(listener)
                elif self.supervisor.owns(fd):
                    self.guarded(self.supervisor.handle, fd, mask)
            self.guarded(self.supervisor.tick)
            self.reap()

    @staticmethod
    def guarded(action, *args) -> None:
        """The supervisor fails closed (the connect is refused, see supervise.py); whatever slips past that
        must not end this loop, which would take every running command down with it."""
        with contextlib.suppress(Exception):
            action(*args)

    def start(self, request: dict) -> None:
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                for sig in (signal.SIGTERM, signal.SIGPIPE, signal.SIGXFSZ):  # ours, or ignored by Python
                    signal.signal(sig, signal.SIG_DFL)
                os.setsid()  # off kimi's terminal; the command itself may not call it
                os.dup2(self.devnull, 0)
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                os.chdir(request["cwd"])
                self.restriction.apply(self.me, self.intake_child)
                os.execvpe(request["argv"][0], request["argv"], request["env"])
            finally:
                os._exit(127)
        os.close(out_w)
        self.running.add(pid)
        self.groups.add(pid)
        socket.send_fds(self.sock, [json.dumps({"pid": pid}).encode()], [out_r])
        os.close(out_r)

    def reap(self) -> None:
        """Every child: our own commands, and orphans handed to us as the subreaper."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.running:
                self.running.discard(pid)
                self.sock.send(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}).encode())


def plain_metadata() -> str:
    """chmod/chown/utime where no supervisor answers them (a listener exists up the chain): refused for root,
    who owns every system file; for a user they reach only the user's own files (the README says so)."""
    return "deny" if os.geteuid() == 0 else "allow"


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    ruleset_fd, kimi_pid = int(sys.argv[2]), int(sys.argv[3])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != kimi_pid:
        return  # kimi died before we got here
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    spawner = Spawner(sock, ruleset_fd, json.loads(sys.stdin.buffer.read()))
    signal.signal(signal.SIGTERM, spawner.shutdown)
    try:
        spawner.serve()
    finally:
        spawner.shutdown()


if __name__ == "__main__":
    main()
