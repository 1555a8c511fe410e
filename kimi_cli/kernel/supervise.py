"""The connect() supervisor of the landlock backend: unix sockets reach only the workspace and the private tmp.

Landlock (up to ABI 7) does not mediate connect() to a pathname unix socket, and seccomp cannot read
the address a pointer points to. So the seccomp filter hands every connect() of a sandboxed command to
this supervisor (SECCOMP_RET_USER_NOTIF), which runs in the spawner, outside the sandbox, and does the
connect itself instead of letting the kernel re-run it (a `continue` would re-read memory the command
can change after the check):

1. copy the address out of the command's memory once (/proc/TID/mem);
2. take the command's socket itself (pidfd_getfd): the same open file, whatever fd number it has later;
3. a unix path is opened O_PATH, relative to the command's own cwd; the inode must be a socket whose
   path (the kernel's, from /proc/self/fd) lies in an allowed root; then connect through
   /proc/self/fd/N, which names that very inode, so no rename or symlink swap can redirect it;
4. abstract names are refused (the command's Landlock scope would be bypassed by our connect);
   inet addresses connect only when the network is allowed;
5. the result goes back as the syscall's return value.

Blocking semantics are kept without blocking the spawner: the connect runs non-blocking and a pending
inet connect, or a full unix backlog, is finished later from the spawner's poll loop.
Standard library only (the spawner runs as `python -I -S` and loads this file by path).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import select
import stat
import struct
import time

from .contain import inside_any  # relative: this folder is also loaded as a package of its own (spawner_main)

TYPE_CHECKING = False  # typing itself costs the spawner's start a few ms
if TYPE_CHECKING:
    from kimi_cli.kernel.supervise_meta import MetaCalls

NOTIF_RECV, NOTIF_SEND, NOTIF_ID_VALID = 0xC0502100, 0xC0182101, 0x40082102
CONTINUE = 1  # SECCOMP_USER_NOTIF_FLAG_CONTINUE: only where the decision rests on registers, never on memory
SYS_PIDFD_SEND_SIGNAL, SYS_PIDFD_OPEN, SYS_PIDFD_GETFD = 424, 434, 438
PIDFD_THREAD = os.O_EXCL
AF_UNIX, AF_INET, AF_INET6 = 1, 2, 10
SOL_SOCKET, SO_DOMAIN, SO_ERROR = 1, 39, 4
RETRY_S = 0.02
# setpriority's PRIO_PROCESS/PRIO_PGRP, ioprio_set's IOPRIO_WHO_PROCESS/IOPRIO_WHO_PGRP (the USER kinds never get here)
PROCESS_KIND, GROUP_KIND = {"setpriority": 0, "ioprio_set": 1}, {"setpriority": 1, "ioprio_set": 2}
MAX_PENDING = 128  # connects waiting at once (two fds each): a command's flood must not exhaust the spawner

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]


class Pending:
    """A connect() in hand: checked, then in progress (an inet handshake, or a unix listener whose backlog
    was full). A plain class: dataclasses would cost the spawner's start ~7 ms of imports."""

    __slots__ = ("address", "copy", "listener", "nid", "retry_at", "target")

    def __init__(self, listener: int, nid: int, copy: int, address: bytes) -> None:
        self.listener = listener
        self.nid = nid
        self.copy = copy  # the command's socket (the same open file)
        self.address = address
        self.target = -1  # a unix path: the socket inode, held open (O_PATH) until the connect is done
        self.retry_at: float | None = None  # unix: when to try again; None: inet, waiting for POLLOUT


class Supervisor:
    """Answers the connect() notifications of every command the spawner started."""

    def __init__(
        self,
        poller: select.poll,
        roots: list[str],
        network: bool,
        hidden: list[str] | None = None,
        meta: MetaCalls | None = None,
        pid_calls: dict[int, str] | None = None,
        signals: dict[int, str] | None = None,
    ) -> None:
        self.poller = poller
        self.roots = [os.path.realpath(r) for r in roots]
        self.hidden = [os.path.normpath(h) for h in hidden or []]  # a workspace that is ~ holds ~/.ssh's sockets
        self.network = network
        self.meta = meta  # supervise_meta.MetaCalls: chmod/chown/utime, when the filter sends them here
        self.pid_calls = pid_calls or {}  # syscall number -> name: prlimit64, setpriority, sched_set*...
        self.signals = signals or {}  # syscall number -> name, when the filter sends signals here (ABI < 6)
        self.listeners: set[int] = set()
        self.pending: dict[int, Pending] = {}  # by our copy of the socket

    def add(self, listener: int) -> None:
        self.listeners.add(listener)
        self.poller.register(listener, select.POLLIN)

    def owns(self, fd: int) -> bool:
        return fd in self.listeners or fd in self.pending

    def handle(self, fd: int, events: int) -> None:
        if fd in self.pending:
            self._finish(self.pending[fd])
        elif events & select.POLLIN:
            self._receive(fd)
        elif events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):  # no process uses the filter now
            self.listeners.discard(fd)
            self.poller.unregister(fd)
            os.close(fd)

    def timeout_ms(self) -> int:
        """How long the poll loop may sleep: unix retries and checks on waiting commands need a tick."""
        return -1 if not self.pending else int(RETRY_S * 1000)

    def tick(self) -> None:
        now = time.monotonic()
        for pending in list(self.pending.values()):
            if not _id_valid(pending.listener, pending.nid):  # the command was killed or interrupted
                self._drop(pending)
            elif pending.retry_at is not None and now >= pending.retry_at:
                self._finish(pending)

    def _receive(self, listener: int) -> None:
        notif = ctypes.create_string_buffer(80)
        if _libc.ioctl(listener, NOTIF_RECV, notif) != 0:
            return  # withdrawn (a signal) or the command is gone
        nid, tid = struct.unpack_from("=QI", notif, 0)
        nr = struct.unpack_from("=i", notif, 16)[0]
        if nr in self.pid_calls:
            self._on_process(listener, nid, tid, self.pid_calls[nr], struct.unpack_from("=2Q", notif, 32))
            return
        if nr in self.signals:
            self._signal(listener, nid, tid, self.signals[nr], struct.unpack_from("=6Q", notif, 32))
            return
        if self.meta is not None and self.meta.handles(nr):
            _respond(listener, nid, self._metadata(listener, nid, tid, nr, struct.unpack_from("=6Q", notif, 32)))
            return
        fd_arg, addr_ptr, addr_len = struct.unpack_from("=3Q", notif, 32)
        try:
            copy, address = self._fetch(listener, nid, tid, ctypes.c_int32(fd_arg & 0xFFFFFFFF).value, addr_ptr,
                                        addr_len & 0xFFFFFFFF)  # fmt: skip
        except OSError as exc:
            _respond(listener, nid, exc.errno or errno.EPERM)
            return
        except Exception:
            _respond(listener, nid, errno.EPERM)
            return
        pending = Pending(listener, nid, copy, address)
        try:
            err = self._check(tid, pending)
        except OSError as exc:
            err = exc.errno or errno.EACCES
        except Exception:  # a bug here must refuse this connect, not take the spawner and every command down
            err = errno.EACCES
        if err:
            self._done(pending, err)
            return
        try:
            self._start(pending)
        except Exception:
            self._done(pending, errno.EACCES)

    def _on_process(self, listener: int, nid: int, tid: int, name: str, args: tuple[int, ...]) -> None:
        """prlimit64, setpriority, ioprio_set or sched_set* on another pid (or group): only on the caller's own
        command (its process group, which no command can leave), never kimi or the spawner (a core limit would
        dump kimi's memory, the API key with it; a CPU limit kills; SCHED_IDLE or a nice of 19 starves). The
        decision rests on registers the caller cannot change, so the kernel runs the call itself (CONTINUE),
        with the caller's own rights."""
        try:
            own = _pgid(tid)
            if name in ("setpriority", "ioprio_set"):  # (which, who): a process, or a group by its id
                which, who = _int(args[0]), _int(args[1])
                same = who == own if which == GROUP_KIND[name] else which == PROCESS_KIND[name] and _pgid(who) == own
            else:  # prlimit64 and sched_set*: (pid, ...), a thread's id too
                same = _pgid(_int(args[0])) == own
        except OSError:
            same = False
        if same and _id_valid(listener, nid):
            _respond(listener, nid, 0, CONTINUE)
        else:
            _respond(listener, nid, errno.EPERM)

    def _signal(self, listener: int, nid: int, tid: int, name: str, args: tuple[int, ...]) -> None:
        """A signal (or F_SETOWN's SIGIO) without Landlock's signal scope (ABI < 6): only to a process of the
        caller's own command, its process group, which no command can leave. A pid is a register the
        caller cannot change, so the kernel runs those calls itself (CONTINUE); a pidfd is an fd number
        another thread could re-point, so pidfd_send_signal is sent by us, on our copy of that pidfd."""
        try:
            own = _pgid(tid)
            if name == "pidfd_send_signal":
                _respond(listener, nid, self._pidfd_signal(tid, own, args))
                return
            if name in ("kill", "rt_sigqueueinfo", "fcntl"):
                target = _int(args[2] if name == "fcntl" else args[0])
                ok = (-target == own) if target < 0 else _pgid(target) == own
            elif name == "tkill":
                ok = _pgid(_int(args[0])) == own
            else:  # tgkill, rt_tgsigqueueinfo: (tgid, tid, ...)
                ok = _pgid(_int(args[0])) == own and _pgid(_int(args[1])) == own
        except OSError:
            ok = False
        if ok and _id_valid(listener, nid):
            _respond(listener, nid, 0, CONTINUE)
        else:
            _respond(listener, nid, errno.EPERM)

    @staticmethod
    def _pidfd_signal(tid: int, own: int, args: tuple[int, ...]) -> int:
        if args[2]:
            return errno.EPERM  # a siginfo of the caller's own making: not for another process
        pidfd = thread_pidfd(tid)
        try:
            copy = _libc.syscall(SYS_PIDFD_GETFD, pidfd, _int(args[0]), 0)
        finally:
            os.close(pidfd)
        if copy < 0:
            return errno.EBADF
        try:
            with open(f"/proc/self/fdinfo/{copy}", "rb") as fh:
                pid = next((int(line.split()[1]) for line in fh if line.startswith(b"Pid:")), -1)
            if pid <= 0 or _pgid(pid) != own:
                return errno.EPERM
            if _libc.syscall(SYS_PIDFD_SEND_SIGNAL, copy, _int(args[1]), None, ctypes.c_uint(args[3] & 0xFFFFFFFF)):
                return ctypes.get_errno() or errno.EPERM
            return 0
        finally:
            os.close(copy)

    def _metadata(self, listener: int, nid: int, tid: int, nr: int, args: tuple[int, ...]) -> int:
        """chmod/chown/utime (supervise_meta.py): the errno to answer, 0 when it was done."""
        assert self.meta is not None
        try:
            return int(self.meta.handle(nr, tid, args, lambda: _id_valid(listener, nid)))
        except Exception:  # a bug here refuses the call; it never takes the spawner down
            return errno.EPERM

    def _fetch(self, listener: int, nid: int, tid: int, fd: int, ptr: int, length: int) -> tuple[int, bytes]:
        if not 2 <= length <= 128:
            raise OSError(errno.EINVAL, "address length")
        pidfd = thread_pidfd(tid)
        try:
            mem = os.open(f"/proc/{tid}/mem", os.O_RDONLY | os.O_CLOEXEC)
            try:
                if not _id_valid(listener, nid):  # the tid is still the command that asked
                    raise OSError(errno.ESRCH, "gone")
                address = os.pread(mem, length, ptr)
            finally:
                os.close(mem)
            copy = _libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
            if copy < 0:
                raise OSError(ctypes.get_errno(), "pidfd_getfd")
            return int(copy), address
        finally:
            os.close(pidfd)

    def _check(self, tid: int, pending: Pending) -> int:
        """0 when the connect may go ahead (pending.address is then what to connect to), else the errno."""
        domain = struct.unpack("=i", _getsockopt(pending.copy, SO_DOMAIN))[0]
        if domain in (AF_INET, AF_INET6):
            return 0 if self.network else errno.EACCES
        if domain != AF_UNIX:
            return 0  # netlink: no path, nothing outside to reach
        address = pending.address
        if struct.unpack_from("=H", address)[0] != AF_UNIX:
            return errno.EINVAL
        path = address[2:].split(b"\0", 1)[0] if address[2:3] != b"\0" else b""
        if not path:
            return errno.EACCES  # abstract or unnamed: refused (our connect would leave the Landlock scope)
        cwd = os.open(f"/proc/{tid}/cwd", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            pending.target = os.open(as_seen_by(tid, os.fsdecode(path)), os.O_PATH | os.O_CLOEXEC, dir_fd=cwd)
        finally:
            os.close(cwd)
        if not stat.S_ISSOCK(os.fstat(pending.target).st_mode):
            return errno.ECONNREFUSED
        real = os.readlink(f"/proc/self/fd/{pending.target}")
        if not inside_any(real, self.roots):
            return errno.EACCES
        if inside_any(real, self.hidden):
            return errno.EACCES  # ~/.ssh's ControlMaster sockets, ~/.gnupg's agent: hidden inside the workspace too
        # /proc/self/fd/N names this very inode: no rename or symlink swap can redirect the connect.
        pending.address = struct.pack("=H", AF_UNIX) + f"/proc/self/fd/{pending.target}".encode() + b"\0"
        return 0

    def _start(self, pending: Pending) -> None:
        flags = fcntl.fcntl(pending.copy, fcntl.F_GETFL)
        blocking = not flags & os.O_NONBLOCK
        if blocking:
            fcntl.fcntl(pending.copy, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        buf = ctypes.create_string_buffer(pending.address, len(pending.address))
        err = 0 if _libc.connect(pending.copy, buf, len(pending.address)) == 0 else ctypes.get_errno()
        if blocking:
            fcntl.fcntl(pending.copy, fcntl.F_SETFL, flags)
        if err in (errno.EINPROGRESS, errno.EAGAIN) and len(self.pending) >= MAX_PENDING:
            self._done(pending, errno.EAGAIN)  # refused, not queued: the spawner keeps its descriptors
        elif blocking and err == errno.EINPROGRESS:
            pending.retry_at = None
            self.pending[pending.copy] = pending
            self.poller.register(pending.copy, select.POLLOUT)
        elif blocking and err == errno.EAGAIN:  # a unix listener's backlog is full: a blocking connect waits
            pending.retry_at = time.monotonic() + RETRY_S
            self.pending[pending.copy] = pending
        else:
            self._done(pending, err)

    def _finish(self, pending: Pending) -> None:
        if pending.retry_at is not None:
            del self.pending[pending.copy]
            self._start(pending)
            return
        err = struct.unpack("=i", _getsockopt(pending.copy, SO_ERROR))[0]
        self.poller.unregister(pending.copy)
        del self.pending[pending.copy]
        self._done(pending, err)

    def _done(self, pending: Pending, err: int) -> None:
        _respond(pending.listener, pending.nid, err)
        self._close(pending)

    def _drop(self, pending: Pending) -> None:
        if pending.retry_at is None:
            self.poller.unregister(pending.copy)
        del self.pending[pending.copy]
        self._close(pending)

    @staticmethod
    def _close(pending: Pending) -> None:
        if pending.target >= 0:
            os.close(pending.target)
        os.close(pending.copy)


def _respond(listener: int, nid: int, err: int, flags: int = 0) -> None:
    resp = ctypes.create_string_buffer(struct.pack("=QqiI", nid, 0, -err, flags), 24)
    _libc.ioctl(listener, NOTIF_SEND, resp)  # ENOENT: the command stopped waiting; nothing to do


def _int(value: int) -> int:
    """A 64-bit register as the kernel reads an int argument (a pid)."""
    return ctypes.c_int32(value & 0xFFFFFFFF).value


def _pgid(pid: int) -> int:
    """A process's group, from /proc/PID/stat (after the command name, which may hold spaces and parens)."""
    if pid <= 0:
        raise OSError(errno.ESRCH, "no such process")
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return int(fh.read().rsplit(b")", 1)[1].split()[2])


def _id_valid(listener: int, nid: int) -> bool:
    buf = ctypes.c_uint64(nid)
    return _libc.ioctl(listener, NOTIF_ID_VALID, ctypes.byref(buf)) == 0


SELF_LINKS = {"/proc/self": "/proc/{tgid}", "/proc/thread-self": "/proc/{tgid}/task/{tid}",
              "/dev/fd": "/proc/{tgid}/fd", "/dev/stdin": "/proc/{tgid}/fd/0", "/dev/stdout": "/proc/{tgid}/fd/1",
              "/dev/stderr": "/proc/{tgid}/fd/2"}  # fmt: skip


def as_seen_by(tid: int, path: str) -> str:
    """The path as the command means it: /proc/self is the supervisor's own when we open it. glibc's
    fchmodat(AT_SYMLINK_NOFOLLOW) chmods /proc/self/fd/N of an O_PATH fd (tar and Python's lchmod do it), and
    long socket paths are connected as /proc/self/fd/N/name. Any other route to a magic link resolves in our
    context, where the inode check that follows still holds."""
    for link, theirs in SELF_LINKS.items():
        if path == link or path.startswith(link + "/"):
            return theirs.format(tgid=_tgid(tid), tid=tid) + path[len(link) :]
    return path


def thread_pidfd(tid: int) -> int:
    """A pidfd for the calling thread (its fd table), or its thread group's before Linux 6.9."""
    try:
        return _pidfd_open(tid, PIDFD_THREAD)
    except OSError:
        return _pidfd_open(_tgid(tid), 0)


def _pidfd_open(pid: int, flags: int) -> int:
    fd = _libc.syscall(SYS_PIDFD_OPEN, pid, flags)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "pidfd_open")
    return int(fd)


def _tgid(tid: int) -> int:
    with open(f"/proc/{tid}/status", "rb") as fh:
        for line in fh:
            if line.startswith(b"Tgid:"):
                return int(line.split()[1])
    raise OSError(errno.ESRCH, "no such task")


def _getsockopt(fd: int, option: int) -> bytes:
    value = ctypes.c_int(0)
    size = ctypes.c_uint32(4)
    if _libc.getsockopt(fd, SOL_SOCKET, option, ctypes.byref(value), ctypes.byref(size)) != 0:
        raise OSError(ctypes.get_errno(), "getsockopt")
    return struct.pack("=i", value.value)
