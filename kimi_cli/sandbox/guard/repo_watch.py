"""Where repositories appear in the workspace: every folder is watched, so a `.git` made anywhere is found.

A command may `git init` (or unpack, or move in) a repository in any folder, and the user's own git run
there later reads its config. Finding one means knowing which folders changed, without walking the whole
tree after every command (about 5 us a folder: 50 ms for a 10,000-folder checkout). So each folder gets an
inotify watch for entries made or moved in; after a command only the folders with events are listed again.
A folder the kernel will not watch (the user's watch limit reached, perhaps by a command itself) is polled
instead: its change time (ctime, which no command can set back) is compared after each command. A full
walk runs at the start and after the kernel's event queue overflowed.

Folders are opened from the workspace root without following links (safe_fs), so a folder swapped for a
link is never listed through it. What is reported is a candidate: a folder named `.git`, a `.git` file or
link (a pointer to a git dir), or a folder shaped like a bare repository (HEAD, objects, refs), which git
also takes for one. The folders inside a git dir are not walked: repo_scrub.py checks what in them matters.
"""

from __future__ import annotations

import collections
import ctypes
import os
import struct
from dataclasses import dataclass, field

from kimi_cli.hostsafe import fs as safe_fs

MAX_DIRS = 50_000  # folders watched or polled; past it, deeper folders are not looked at (reported)
MAX_DEPTH = 64  # below the root: git run by hand that deep is not a case to pay for on every command
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE_SELF = 0x40, 0x80, 0x100, 0x400
IN_Q_OVERFLOW, IN_IGNORED, IN_ONLYDIR, IN_EXCL_UNLINK, IN_ISDIR = 0x4000, 0x8000, 0x01000000, 0x04000000, 0x40000000
WATCH_MASK = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK
IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
EVENT = struct.Struct("iIII")

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class Found:
    """Candidates seen in the folders listed by one scan (workspace-relative)."""

    git_dirs: set[str] = field(default_factory=set)
    pointers: set[str] = field(default_factory=set)


class TreeWatch:
    """The workspace's folders, watched (or polled); scan() lists the changed ones and names candidates."""

    def __init__(self, root_fd: int) -> None:
        self.dirs: dict[str, tuple[int, int]] = {}  # folder -> (ctime, inode) when last listed
        self.polled: set[str] = set()  # folders without a watch
        self.by_wd: dict[int, str] = {}
        self.wd_of: dict[str, int] = {}
        self.partial = False  # MAX_DIRS or MAX_DEPTH left folders out
        fd = _libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        self.fd = fd if fd >= 0 else -1
        self.found = Found()
        self._walk(root_fd, [""])

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:  # a sandbox dropped unclosed must not keep an inotify instance (128 per user)
        self.close()

    def scan(self, root_fd: int) -> Found:
        """List again what changed since the last scan: folders with events, and polled ones whose ctime moved."""
        self.found = Found()
        changed: set[str] = set()
        overflow = self._events(changed)
        if overflow:
            changed = set(self.dirs)
        for rel in list(self.polled):
            if rel in changed:
                continue
            try:
                st = os.stat(rel or ".", dir_fd=root_fd, follow_symlinks=False)
            except OSError:
                self._forget(rel)
                continue
            if (st.st_ctime_ns, st.st_ino) != self.dirs.get(rel):
                changed.add(rel)
        self._walk(root_fd, sorted(changed, key=lambda r: r.count("/")))
        return self.found

    def _events(self, changed: set[str]) -> bool:
        """Read the queued events: folders where entries appeared go to `changed`; True on an overflow."""
        if self.fd < 0:
            return False
        moved_out: list[str] = []
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            offset = 0
            while offset + EVENT.size <= len(data):
                wd, mask, _cookie, size = EVENT.unpack_from(data, offset)
                raw = data[offset + EVENT.size : offset + EVENT.size + size]
                name = raw.rstrip(b"\0").decode("utf-8", "surrogateescape")
                offset += EVENT.size + size
                if mask & IN_Q_OVERFLOW:
                    return True
                rel = self.by_wd.get(wd)
                if rel is None:
                    continue
                if mask & (IN_IGNORED | IN_DELETE_SELF):
                    self.by_wd.pop(wd, None)
                    if self.wd_of.get(rel) == wd:
                        self._forget(rel)
                    continue
                if mask & IN_MOVED_FROM and mask & IN_ISDIR:
                    moved_out.append(_join(rel, name))
                changed.add(rel)
        for rel in moved_out:  # its folders' watches follow it wherever it went: their names are stale
            self._forget_tree(rel)
        return False

    def _walk(self, root_fd: int, folders: list[str]) -> None:
        """List each of `folders`, and every folder below them that is not known yet (breadth first)."""
        queue = collections.deque(folders)
        while queue:
            rel = queue.popleft()
            try:
                fd = safe_fs.open_dir_at(root_fd, rel)
            except PermissionError:  # `chmod 000` by a command: tried again after every command until it opens
                self.dirs[rel] = (0, 0)
                self.polled.add(rel)
                continue
            except OSError:
                self._forget(rel)
                continue
            try:
                st = os.fstat(fd)  # before the listing: an entry made during it changes ctime again
                self._watch(rel, fd)
                self.dirs[rel] = (st.st_ctime_ns, st.st_ino)
                entries = list(os.scandir(fd))
            except OSError:
                continue
            finally:
                os.close(fd)
            subdirs: list[os.DirEntry[str]] = []
            for entry in entries:  # the hot loop of the first walk: one d_type test per entry, no stat
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if entry.name == ".git":
                    (self.found.git_dirs if is_dir else self.found.pointers).add(_join(rel, ".git"))
                elif is_dir:
                    subdirs.append(entry)
            if rel and "HEAD" in {e.name for e in entries} and {"objects", "refs"} <= {e.name for e in subdirs}:
                self.found.git_dirs.add(rel)  # git would take this folder for a repository: not walked into
                continue
            deep = rel.count("/") + 1 >= MAX_DEPTH if rel else False
            for entry in subdirs:
                child = _join(rel, entry.name)
                known = self.dirs.get(child)
                if known is not None and known[1] in (0, entry.inode()):
                    continue
                if known is not None:  # another folder under a known name (moved over it): walked whole
                    self._forget_tree(child)
                if deep or len(self.dirs) >= MAX_DIRS:
                    self.partial = True
                else:
                    self.dirs[child] = (0, 0)  # listed soon; (0, 0) until then
                    queue.append(child)

    def _watch(self, rel: str, fd: int) -> None:
        """A watch on the folder the descriptor holds (through /proc, never by a path a link could redirect)."""
        if self.fd < 0:
            self.polled.add(rel)
            return
        wd = _libc.inotify_add_watch(self.fd, f"/proc/self/fd/{fd}".encode(), WATCH_MASK)
        if wd < 0:
            self.polled.add(rel)
            return
        old = self.by_wd.get(wd)
        if old is not None and old != rel:
            self.wd_of.pop(old, None)  # the same folder under a new name (moved): one watch
        self.by_wd[wd] = rel
        self.wd_of[rel] = wd
        self.polled.discard(rel)

    def _forget(self, rel: str) -> None:
        self.dirs.pop(rel, None)
        self.polled.discard(rel)
        wd = self.wd_of.pop(rel, None)
        if wd is not None and self.by_wd.get(wd) == rel:
            del self.by_wd[wd]
            if self.fd >= 0:
                _libc.inotify_rm_watch(self.fd, wd)

    def _forget_tree(self, rel: str) -> None:
        prefix = rel + "/"
        for known in [r for r in self.dirs if r == rel or r.startswith(prefix)]:
            self._forget(known)


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name
