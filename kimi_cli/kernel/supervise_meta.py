"""chmod, chown and utime for the landlock backend: applied by the supervisor, only inside the workspace.
(And truncate by path, on kernels whose Landlock is older than ABI 3, which did not handle it.)

Landlock (up to ABI 7) does not mediate a file's mode, owner or timestamps. Without this, a command could
`chmod o+r ~/.ssh/id_rsa` or `touch` your files, and as root `chmod 666 /etc/shadow` or `chmod o+w` any
system binary (root owns them, so no capability is needed). seccomp cannot read the path a pointer points
to, so these calls come here (SECCOMP_RET_USER_NOTIF) and are done by the supervisor, never continued:

1. the target is resolved once, by us: the path (copied out of the command's memory once) opened O_PATH
   relative to the command's own dirfd or cwd (its fd copied with pidfd_getfd), following links exactly
   when the call would; an fd-based call (fchmod, futimens) takes the command's own open file;
2. the inode's path (the kernel's, from /proc/self/fd) must lie in the workspace or private tmp, and not
   under a hidden path (a workspace that is the home folder holds ~/.ssh);
3. the change is checked with the command's own credentials (owner for modes and explicit times, the
   caller's groups for chgrp: a supervisor running as root must not lend it root's capabilities), then
   made on that very inode (/proc/self/fd/N or AT_EMPTY_PATH), so no rename or link swap can redirect it.

Standard library only (the spawner runs as `python -I -S` and loads this file by path).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import stat
import struct

from .contain import inside_any  # relative: this folder is also loaded as a package of its own (spawner_main)

TYPE_CHECKING = False  # typing itself costs the spawner's start a few ms
if TYPE_CHECKING:
    from collections.abc import Callable

AT_FDCWD, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH = -100, 0x100, 0x1000
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
SYS_PIDFD_GETFD = 438
NO_ID = 0xFFFFFFFF  # chown's -1: leave the owner (or group) as it is
PATH_MAX = 4096

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.fchownat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int]
_libc.utimensat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int]

# name -> (kind, how the target is named, index of the flags argument or None)
#   kind: "mode" | "owner" | "times"; target: "path" (AT_FDCWD), "at" (dirfd, path), "fd", "lpath" (no follow)
CALLS: dict[str, tuple[str, str, int | None]] = {
    "chmod": ("mode", "path", None), "fchmod": ("mode", "fd", None), "fchmodat": ("mode", "at", None),
    "fchmodat2": ("mode", "at", 3), "chown": ("owner", "path", None), "lchown": ("owner", "lpath", None),
    "fchown": ("owner", "fd", None), "fchownat": ("owner", "at", 4), "utime": ("times", "path", None),
    "utimes": ("times", "path", None), "futimesat": ("times", "at", None), "utimensat": ("times", "at", 3),
    "truncate": ("size", "path", None),  # only below Landlock ABI 3, which does not handle it
}  # fmt: skip


class Refused(OSError):
    """The call is answered with this errno; nothing was changed."""

    def __init__(self, code: int) -> None:
        super().__init__(code, os.strerror(code))


class Creds:
    """The commands' file-system identity: the spawner's own. A command cannot change it (no capabilities,
    no_new_privs: setuid programs grant nothing), so it is read once, not from /proc at every call."""

    __slots__ = ("fsgid", "fsuid", "groups")

    def __init__(self) -> None:
        self.fsuid, self.fsgid = os.geteuid(), os.getegid()
        self.groups = {*os.getgroups(), self.fsgid}

    def may_write(self, st: os.stat_result) -> bool:
        if st.st_uid == self.fsuid:
            return bool(st.st_mode & 0o200)
        if st.st_gid in self.groups:
            return bool(st.st_mode & 0o020)
        return bool(st.st_mode & 0o002)


class MetaCalls:
    """Decodes one notified metadata call, checks it, and applies it; `handle` returns the errno (0: done)."""

    def __init__(
        self,
        names: dict[int, str],
        roots: list[str],
        hidden: list[str],
        thread_pidfd: Callable[[int], int],
        as_seen_by: Callable[[int, str], str],
    ) -> None:
        self.names = names  # syscall number -> name, for this architecture
        self.roots = [os.path.realpath(r) for r in roots]
        self.hidden = [os.path.normpath(h) for h in hidden]
        self.thread_pidfd = thread_pidfd  # a pidfd for a thread's fd table (supervise.py)
        self.as_seen_by = as_seen_by  # /proc/self as the command means it (supervise.py)
        self.creds = Creds()

    def handles(self, nr: int) -> bool:
        return nr in self.names

    def handle(self, nr: int, tid: int, args: tuple[int, ...], still_valid: Callable[[], bool]) -> int:
        """`still_valid()`: the call is still waiting (the tid is still the command that asked)."""
        name = self.names[nr]
        kind, naming, flags_at = CALLS[name]
        flags = _int(args[flags_at]) if flags_at is not None else 0
        if naming == "lpath":
            flags |= AT_SYMLINK_NOFOLLOW
        try:
            values = self._values(kind, name, tid, args)
            target = self._target(naming, name, tid, args, flags)
            try:
                if not still_valid():
                    return errno.ESRCH
                self._allowed(target)
                self._apply(kind, target, values, flags, self.creds)
            finally:
                os.close(target)
        except Refused as exc:
            return exc.errno or errno.EPERM
        except OSError as exc:
            return exc.errno or errno.EPERM
        return 0

    # -- what to set --------------------------------------------------------------------------------------

    def _values(self, kind: str, name: str, tid: int, args: tuple[int, ...]) -> tuple[int, ...] | bytes | None:
        if kind == "mode":
            mode = args[2] if name in ("fchmodat", "fchmodat2") else args[1]
            return (mode & 0xFFFF,)
        if kind == "owner":
            first = 2 if name == "fchownat" else 1
            return (args[first] & NO_ID, args[first + 1] & NO_ID)
        if kind == "size":
            return (ctypes.c_int64(args[1]).value,)
        pointer = args[2] if name in ("futimesat", "utimensat") else args[1]
        if pointer == 0:
            return None  # now, both
        if name == "utime":  # struct utimbuf: two time_t
            atime, mtime = struct.unpack("=qq", _read(tid, pointer, 16))
            return struct.pack("=qqqq", atime, 0, mtime, 0)
        raw = _read(tid, pointer, 32)
        if name == "utimensat":
            return raw
        a_sec, a_usec, m_sec, m_usec = struct.unpack("=qqqq", raw)  # struct timeval[2]
        if not (0 <= a_usec < 1_000_000 and 0 <= m_usec < 1_000_000):
            raise Refused(errno.EINVAL)
        return struct.pack("=qqqq", a_sec, a_usec * 1000, m_sec, m_usec * 1000)

    # -- on which inode -----------------------------------------------------------------------------------

    def _their_fd(self, tid: int, fd: int) -> int:
        """Our copy of the command's fd (the same open file)."""
        pidfd = self.thread_pidfd(tid)
        try:
            copy = _libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        finally:
            os.close(pidfd)
        if copy < 0:
            raise Refused(errno.EBADF)
        return int(copy)

    def _target(self, naming: str, name: str, tid: int, args: tuple[int, ...], flags: int) -> int:
        """An fd of ours for the inode the call names: O_PATH for paths, the command's own file for fds."""
        if naming == "fd":
            fd = self._their_fd(tid, _int(args[0]))
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_PATH:  # fchmod/fchown need a real open file
                os.close(fd)
                raise Refused(errno.EBADF)
            return fd
        dirfd = _int(args[0]) if naming == "at" else AT_FDCWD
        pointer = args[1] if naming == "at" else args[0]
        if pointer == 0:
            if name == "utimensat" and dirfd != AT_FDCWD and not flags & AT_SYMLINK_NOFOLLOW:
                return self._their_fd(tid, dirfd)  # futimens(fd): the file itself
            raise Refused(errno.EFAULT)
        path = self.as_seen_by(tid, _read_path(tid, pointer))
        if path.startswith("/") and dirfd == AT_FDCWD:
            return os.open(path, os.O_PATH | os.O_CLOEXEC | (os.O_NOFOLLOW if flags & AT_SYMLINK_NOFOLLOW else 0))
        base = (
            os.open(f"/proc/{tid}/cwd", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            if dirfd == AT_FDCWD
            else self._their_fd(tid, dirfd)
        )
        try:
            if not path:
                if not flags & AT_EMPTY_PATH:
                    raise Refused(errno.ENOENT)
                return os.dup(base)
            nofollow = os.O_NOFOLLOW if flags & AT_SYMLINK_NOFOLLOW else 0
            return os.open(path, os.O_PATH | os.O_CLOEXEC | nofollow, dir_fd=base)
        finally:
            os.close(base)

    def _allowed(self, target: int) -> None:
        real = os.readlink(f"/proc/self/fd/{target}")
        if real.endswith(" (deleted)"):
            real = real[: -len(" (deleted)")]
        if not inside_any(real, self.roots) or inside_any(real, self.hidden):
            raise Refused(errno.EPERM)

    # -- the change, with the command's own rights --------------------------------------------------------

    def _apply(self, kind: str, target: int, values: tuple[int, ...] | bytes | None, flags: int, who: Creds) -> None:
        st = os.fstat(target)
        link = stat.S_ISLNK(st.st_mode)
        if kind == "mode":
            assert isinstance(values, tuple)
            mode = values[0] & 0o7777
            if link:
                raise Refused(errno.EOPNOTSUPP)  # as the kernel answers fchmodat2(AT_SYMLINK_NOFOLLOW) on a link
            if mode & 0o6000 or st.st_uid != who.fsuid:
                raise Refused(errno.EPERM)
            os.chmod(f"/proc/self/fd/{target}", mode)
        elif kind == "size":
            assert isinstance(values, tuple)
            if values[0] < 0:
                raise Refused(errno.EINVAL)
            if stat.S_ISDIR(st.st_mode):
                raise Refused(errno.EISDIR)
            if not stat.S_ISREG(st.st_mode) or not who.may_write(st):
                raise Refused(errno.EACCES)
            os.truncate(f"/proc/self/fd/{target}", values[0])
        elif kind == "owner":
            assert isinstance(values, tuple)
            uid, gid = values
            if uid != NO_ID and (uid != st.st_uid or who.fsuid != st.st_uid):
                raise Refused(errno.EPERM)  # only the owner, and only to itself: root's CAP_CHOWN is not lent
            if gid != NO_ID and (who.fsuid != st.st_uid or (gid != st.st_gid and gid not in who.groups)):
                raise Refused(errno.EPERM)  # the owner, to one of its own groups
            if _libc.fchownat(target, b"", uid, gid, AT_EMPTY_PATH) != 0:
                raise Refused(ctypes.get_errno())
        else:
            times = values if isinstance(values, bytes) else None
            if times is not None:
                a_nsec, m_nsec = struct.unpack_from("=8xq8xq", times)
                if a_nsec == m_nsec == UTIME_OMIT:
                    return
                explicit = not (a_nsec == m_nsec == UTIME_NOW)
            else:
                explicit = False
            if st.st_uid != who.fsuid and (explicit or not who.may_write(st)):
                raise Refused(errno.EPERM if explicit else errno.EACCES)
            buf = None if times is None else ctypes.create_string_buffer(times, 32)
            if _libc.utimensat(target, b"", buf, AT_EMPTY_PATH) != 0:
                raise Refused(ctypes.get_errno())


def _int(value: int) -> int:
    """A 64-bit register as the kernel reads an int argument."""
    return ctypes.c_int32(value & 0xFFFFFFFF).value


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


_libc.process_vm_readv.restype = ctypes.c_ssize_t


def _peek(tid: int, pointer: int, size: int) -> bytes:
    """Up to `size` bytes of the command's memory, in one call (it stops early at an unmapped page)."""
    buf = ctypes.create_string_buffer(size)
    local, remote = _IoVec(ctypes.addressof(buf), size), _IoVec(pointer, size)
    got = _libc.process_vm_readv(tid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if got < 0:
        raise Refused(errno.EFAULT)
    return buf.raw[:got]


def _read(tid: int, pointer: int, size: int) -> bytes:
    data = _peek(tid, pointer, size)
    if len(data) != size:
        raise Refused(errno.EFAULT)
    return data


def _read_path(tid: int, pointer: int) -> str:
    """A NUL-terminated path from the command's memory."""
    data = _peek(tid, pointer, PATH_MAX)
    end = data.find(b"\0")
    if end < 0:
        raise Refused(errno.ENAMETOOLONG if len(data) == PATH_MAX else errno.EFAULT)
    return os.fsdecode(data[:end])
