"""Workspace file access that no symlink can steer out of the workspace, at any moment.

Every open starts from a descriptor of the workspace root and refuses a symlink anywhere on the way:
`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)` where the kernel has it (Linux
5.6+), else one `openat(O_NOFOLLOW)` per component from the root's descriptor. A command in the sandbox
may swap any folder for a link while we work (renameat2 RENAME_EXCHANGE): the kernel then fails the
open instead of following it. Callers that honour a symlink inside the workspace (the file tools)
resolve it first (Workspace.resolve) and open the resolved path, so a link inside still works and a
swap in between is refused. Checks (a regular file? how big?) use fstat on the opened descriptor, never
the path string. Writes are a temp file and a rename inside the parent folder's descriptor: replace_in, the
one atomic write kimi has (the file tools, undo, the sandbox's guard and kimi's own private files use it).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

SYS_OPENAT2 = 437  # the same number on x86_64 and aarch64 (syscalls added after 5.1 share one table)
RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH = 0x02, 0x04, 0x08
STRICT = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
CLOEXEC = os.O_CLOEXEC
O_PATH = getattr(os, "O_PATH", os.O_RDONLY)  # Linux; elsewhere a read open stands in (links then cannot be lstat'ed)
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY  # a FIFO or a tty never blocks us or becomes ours
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY
AT_REMOVEDIR = 0x200

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_openat2_ok: bool | None = None  # probed once per process


class UnsafePath(OSError):
    """The path goes through a symlink, or out of the workspace: refused, nothing opened."""


class NotRegularFile(OSError):
    """The path is a folder, a FIFO, a socket or a device where a regular file was expected."""


def _parts(rel: str | os.PathLike[str]) -> list[str]:
    """Components of a workspace-relative path; `..` and absolute paths are refused outright."""
    text = os.fspath(rel)
    if text.startswith("/"):
        raise UnsafePath(errno.EXDEV, "absolute path where a workspace-relative one is needed", text)
    parts = [p for p in text.split("/") if p and p != "."]
    if ".." in parts:
        raise UnsafePath(errno.EXDEV, "`..` in a workspace path", text)
    return parts


def _have_openat2() -> bool:
    global _openat2_ok
    if _openat2_ok is None and not sys.platform.startswith("linux"):
        _openat2_ok = False  # syscall 437 means something else elsewhere
    if _openat2_ok is None:
        fd = _sys_openat2(-100, "/", O_PATH | CLOEXEC, 0, 0)  # AT_FDCWD
        _openat2_ok = fd >= 0
        if fd >= 0:
            os.close(fd)
    return _openat2_ok


def _sys_openat2(dirfd: int, path: str, flags: int, mode: int, resolve: int) -> int:
    """The raw syscall: the new fd, or -errno (ENOSYS or EPERM where a kernel or seccomp lacks it)."""
    how = ctypes.create_string_buffer(struct.pack("=QQQ", flags, mode, resolve), 24)
    fd = _libc.syscall(SYS_OPENAT2, dirfd, os.fsencode(path), how, ctypes.c_size_t(24))
    return int(fd) if fd >= 0 else -ctypes.get_errno()


def open_root(root: str | os.PathLike[str]) -> int:
    """A descriptor of the workspace root itself (the user chose it; it is already a resolved path)."""
    return os.open(root, O_PATH | os.O_DIRECTORY | CLOEXEC)


def _refused(err: int, rel: str) -> OSError:
    if err in (errno.ELOOP, errno.EXDEV):
        why = "a symlink is on the way" if err == errno.ELOOP else "it leads out of the workspace"
        return UnsafePath(err, f"refused: {why}", rel)
    return OSError(err, os.strerror(err), rel)


def open_at(root_fd: int, rel: str, flags: int, mode: int = 0o666) -> int:
    """Open `rel` beneath the root descriptor; no component, the last included, may be a symlink."""
    parts = _parts(rel)
    flags |= CLOEXEC | os.O_NOFOLLOW
    if not parts:
        return os.open(".", flags & ~os.O_NOFOLLOW & ~os.O_CREAT, dir_fd=root_fd)
    if _have_openat2():
        for _ in range(8):  # EAGAIN: a rename raced the lookup; the kernel asks us to try again
            fd = _sys_openat2(root_fd, "/".join(parts), flags, mode if flags & os.O_CREAT else 0, STRICT)
            if fd >= 0:
                return fd
            if -fd == errno.ENOTDIR and flags & os.O_DIRECTORY:
                break  # a link where a folder should be also says ENOTDIR: the walk tells which
            if -fd != errno.EAGAIN:
                raise _refused(-fd, rel)
    return _open_walk(root_fd, parts, flags, mode, rel)


def _open_walk(root_fd: int, parts: list[str], flags: int, mode: int, rel: str) -> int:
    """The fallback: one no-follow openat per folder, each from the descriptor of the one before."""
    current = os.open(".", O_PATH | os.O_DIRECTORY | CLOEXEC, dir_fd=root_fd)
    try:
        for name in parts[:-1]:
            try:
                step = os.open(name, O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC, dir_fd=current)
            except NotADirectoryError:
                if stat.S_ISLNK(os.stat(name, dir_fd=current, follow_symlinks=False).st_mode):
                    raise _refused(errno.ELOOP, rel) from None
                raise
            os.close(current)
            current = step
        try:
            return os.open(parts[-1], flags, mode, dir_fd=current)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK) or (
                exc.errno == errno.ENOTDIR and flags & os.O_DIRECTORY and _is_link(current, parts[-1])
            ):
                raise _refused(errno.ELOOP, rel) from None
            raise
    finally:
        os.close(current)


def _is_link(dir_fd: int, name: str) -> bool:
    with contextlib.suppress(OSError):
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    return False


@contextlib.contextmanager
def rooted(root: str | os.PathLike[str]) -> Iterator[int]:
    fd = open_root(root)
    try:
        yield fd
    finally:
        os.close(fd)


def open_file(root: str | os.PathLike[str], rel: str, flags: int = READ_FLAGS, mode: int = 0o666) -> int:
    with rooted(root) as root_fd:
        return open_at(root_fd, rel, flags, mode)


def open_regular_at(root_fd: int, rel: str) -> tuple[int, os.stat_result]:
    """A read descriptor of a regular file and its fstat; a folder, FIFO or device is refused."""
    fd = open_at(root_fd, rel, READ_FLAGS)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise NotRegularFile(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL, what, rel)
    return fd, st


def open_regular(root: str | os.PathLike[str], rel: str) -> tuple[int, os.stat_result]:
    with rooted(root) as root_fd:
        return open_regular_at(root_fd, rel)


def read_at(root_fd: int, rel: str, max_bytes: int | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file (at most max_bytes) and its fstat, read through a no-follow open."""
    fd, st = open_regular_at(root_fd, rel)
    with os.fdopen(fd, "rb", buffering=0) as fh:
        return fh.read() if max_bytes is None else fh.read(max_bytes), st


def read_bytes(root: str | os.PathLike[str], rel: str, max_bytes: int | None = None) -> bytes:
    with rooted(root) as root_fd:
        return read_at(root_fd, rel, max_bytes)[0]


def lstat_at(root_fd: int, rel: str) -> os.stat_result:
    """lstat of `rel` (a final symlink is described, not followed); a link before it is refused."""
    fd = open_at(root_fd, rel, O_PATH)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def open_dir_at(root_fd: int, rel: str, create: bool = False) -> int:
    """A descriptor of a folder beneath the root; with create, missing folders are made (0777 & ~umask)."""
    try:
        return open_at(root_fd, rel, DIR_FLAGS)
    except FileNotFoundError:
        if not create:
            raise
    current = os.open(".", DIR_FLAGS | CLOEXEC, dir_fd=root_fd)
    try:
        for name in _parts(rel):
            step = _child_dir(current, name, rel)
            os.close(current)
            current = step
        return current
    except BaseException:
        os.close(current)
        raise


def _child_dir(current: int, name: str, rel: str) -> int:
    """Open (making it when missing) one folder below `current`, never through a link."""
    for _ in range(2):
        try:
            return os.open(name, DIR_FLAGS | os.O_NOFOLLOW | CLOEXEC, dir_fd=current)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):  # made by someone else meanwhile: open it next round
                os.mkdir(name, 0o777, dir_fd=current)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(current, name):
                raise _refused(errno.ELOOP, rel) from None
            raise
    return os.open(name, DIR_FLAGS | os.O_NOFOLLOW | CLOEXEC, dir_fd=current)


def split(rel: str) -> tuple[str, str]:
    """(folder, name) of a workspace-relative file path."""
    parts = _parts(rel)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, "the workspace root is a folder", rel)
    return "/".join(parts[:-1]), parts[-1]


def write_atomic_at(root_fd: int, rel: str, data: bytes, new_mode: int = 0o666, keep_mode: bool = True) -> None:
    """Replace (or create) `rel` with data through replace_in (the one atomic write), in the parent folder's
    descriptor.

    The rename replaces whatever the name is at that moment, a link included, and never writes through
    it. Parent folders are created. A new file gets new_mode & ~umask (the kernel applies the umask);
    with keep_mode an existing file keeps its mode and, where we may set it, its owner.
    """
    folder, name = split(rel)
    dir_fd = open_dir_at(root_fd, folder, create=True)
    try:
        try:
            old: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None and stat.S_ISDIR(old.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", rel)
        if old is not None and (not keep_mode or not stat.S_ISREG(old.st_mode)):
            old = None  # a link (swapped in since the caller resolved it) is replaced, never written through
        if old is None:
            replace_in(dir_fd, name, data, new_mode)
        else:  # never wider than the file it replaces, and its owner where we may
            replace_in(dir_fd, name, data, old.st_mode & 0o7777, exact=True, owner=(old.st_uid, old.st_gid))
    finally:
        os.close(dir_fd)


def replace_in(
    dir_fd: int,
    name: str,
    data: bytes,
    mode: int = 0o600,
    *,
    exact: bool = False,
    owner: tuple[int, int] | None = None,
    before_rename: Callable[[], None] | None = None,
) -> None:
    """THE atomic write: `name` in the folder `dir_fd` becomes `data`, all of it or nothing.

    A temp file with a name no one can guess is created beside it (O_EXCL | O_NOFOLLOW: never someone
    else's file, never through a link), written and fsync'ed, then renamed over `name` within the folder's
    descriptor (renameat), so no path is looked up again and whatever `name` is at that moment, a link
    included, is replaced, never written through. The file gets `mode & ~umask`; with `exact`, exactly
    `mode` (set on the descriptor; it is 0600 until then), and `owner` where we may set it.
    `before_rename` runs last, right before the rename (the guard clears a folder squatting on the name).
    """
    tmp = _temp_name(name)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | CLOEXEC, 0o600 if exact else mode,
                 dir_fd=dir_fd)  # fmt: skip

    def fill() -> None:
        with os.fdopen(fd, "wb") as fh:
            if owner is not None:
                with contextlib.suppress(PermissionError):
                    os.fchown(fh.fileno(), *owner)  # before the mode: a chown clears setuid/setgid bits
            if exact:
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if before_rename is not None:
            before_rename()

    _swap_in(dir_fd, tmp, name, fill)


def _temp_name(name: str) -> str:
    return f".{name[:60]}.{secrets.token_hex(8)}.kimi-tmp"  # 64 random bits: a racing command cannot guess it


def _swap_in(dir_fd: int, tmp: str, name: str, fill: Callable[[], None] | None = None) -> None:
    """Finish `tmp` (made a moment ago in `dir_fd`) and rename it over `name`; on any failure it is removed."""
    try:
        if fill is not None:
            fill()
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def write_private(path: Path, text: str) -> None:
    """One of kimi's own files (a session's meta, trust, config, caches): written whole through replace_in,
    0600, into a folder made 0700. The folder's path is the user's word (links in ~/.kimi are theirs)."""
    from kimi_cli.util.paths import PRIVATE_FILE, make_private_dir

    make_private_dir(path.parent)
    dir_fd = os.open(path.parent, DIR_FLAGS | CLOEXEC)
    try:
        replace_in(dir_fd, path.name, text.encode("utf-8"), PRIVATE_FILE)
    finally:
        os.close(dir_fd)


def append_at(root_fd: int, rel: str, data: bytes) -> None:
    """Append to an existing regular file (no temp copy: the file may be large)."""
    fd = open_at(root_fd, rel, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_NOCTTY)
    with os.fdopen(fd, "ab") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, "not a regular file", rel)
        if st.st_nlink > 1:  # a hard link: the same file has another name, maybe outside the workspace
            raise OSError(errno.EMLINK, "the file has other hard links, which an append would change too; "
                          "overwrite it instead (that replaces this name only)", rel)  # fmt: skip
        fh.write(data)


def symlink_at(root_fd: int, rel: str, target: str) -> None:
    """Create (or replace) the link `rel` -> target; the link is made, never followed."""
    folder, name = split(rel)
    dir_fd = open_dir_at(root_fd, folder, create=True)
    try:
        tmp = _temp_name(name)
        os.symlink(target, tmp, dir_fd=dir_fd)
        _swap_in(dir_fd, tmp, name)
    finally:
        os.close(dir_fd)


def remove_at(root_fd: int, rel: str, prune: bool = True) -> bool:
    """Unlink `rel` (a link is removed itself), then the folders it leaves empty; False if it was absent.

    Folders on the way are opened without following links, so a folder swapped for a link to the
    outside makes this fail rather than delete there.
    """
    folder, name = split(rel)
    try:
        dir_fd = open_dir_at(root_fd, folder)
    except FileNotFoundError:
        return False
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    finally:
        os.close(dir_fd)
    if prune:
        prune_empty_at(root_fd, folder)
    return True


def prune_empty_at(root_fd: int, folder: str) -> None:
    """Remove `folder` and its parents while they are empty (never the root)."""
    parts = _parts(folder)
    while parts:
        try:
            parent = open_dir_at(root_fd, "/".join(parts[:-1]))
        except OSError:
            return
        try:
            os.rmdir(parts[-1], dir_fd=parent)
        except OSError:
            return
        finally:
            os.close(parent)
        parts.pop()


def readlink_at(root_fd: int, rel: str) -> str:
    """The text of the symlink `rel` (folders before it must be real folders)."""
    folder, name = split(rel)
    dir_fd = open_dir_at(root_fd, folder)
    try:
        return os.readlink(name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def existing_at(root_fd: int, names: list[str], dirs: bool = True) -> list[str]:
    """The names that exist now with only real folders above them (a final link counts: it is listed).

    A listing from git can name `inc/x` while `inc` has become a link to somewhere else; such names
    are dropped, so nothing outside the workspace is even named. dirs=False also drops folders.
    """
    kept = []
    for name in names:
        try:
            fd = open_at(root_fd, name, O_PATH)
        except (OSError, ValueError):
            continue
        try:
            if dirs or not stat.S_ISDIR(os.fstat(fd).st_mode):
                kept.append(name)
        finally:
            os.close(fd)
    return kept


def existing(root: str | os.PathLike[str], names: list[str], dirs: bool = True) -> list[str]:
    with rooted(root) as root_fd:
        return existing_at(root_fd, names, dirs)


def relative_to_root(root: Path, path: Path) -> str:
    """`path` (already resolved, inside root) as the relative string the functions above take."""
    from kimi_cli.kernel.contain import below

    rel = below(root, path)
    if rel is None:
        raise ValueError(f"{path} is not inside {root}")
    return rel
