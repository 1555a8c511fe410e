"""Walking the workspace from folder descriptors: iterative, depth-bounded, links listed but never entered.

os.walk (recursive in Python 3.11) dies with RecursionError on a folder nested 1,100 deep, and it
re-resolves every folder from its path string, so a folder swapped for a link mid-walk is followed.
Here each folder is opened with O_NOFOLLOW from its parent's descriptor, only the current chain of
folders is held open (at most MAX_DEPTH descriptors), and nothing recurses.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kimi_cli.hostsafe.fs import CLOEXEC, DIR_FLAGS, READ_FLAGS, open_dir_at, rooted

MAX_DEPTH = 128  # folders below this depth are not entered (real projects stay far shallower)


@dataclass
class Folder:
    """One folder of the walk. `rel` is "" for the root, else "a/b/"; remove names from `dirs` to prune."""

    rel: str
    fd: int  # valid until the walk moves on
    depth: int
    dirs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # regular files and other non-folders
    links: list[str] = field(default_factory=list)  # symlinks: listed as links, never entered

    def read(self, name: str, max_bytes: int = 1 << 20) -> bytes | None:
        """A small regular file of this folder (a .gitignore), read without following a link."""
        return read_in(self.fd, name, max_bytes)


def read_in(dir_fd: int, name: str, max_bytes: int) -> bytes | None:
    try:
        fd = os.open(name, READ_FLAGS | os.O_NOFOLLOW | CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # before fdopen, which raises on a folder (a `.gitignore/`)
        os.close(fd)
        return None
    with os.fdopen(fd, "rb", buffering=0) as fh:
        return fh.read(max_bytes)


def _scan(fd: int, rel: str, depth: int) -> Folder:
    folder = Folder(rel, fd, depth)
    with contextlib.suppress(OSError), os.scandir(fd) as entries:
        for entry in entries:
            try:
                if entry.is_symlink():
                    folder.links.append(entry.name)
                elif entry.is_dir(follow_symlinks=False):
                    folder.dirs.append(entry.name)
                else:
                    folder.files.append(entry.name)
            except OSError:
                continue
    folder.dirs.sort()
    folder.files.sort()
    folder.links.sort()
    return folder


def walk(root: str | os.PathLike[str], start: str = "", max_depth: int = MAX_DEPTH) -> Iterator[Folder]:
    """Folders top-down, sorted, from `start` (workspace-relative). Prune by editing `folder.dirs`."""
    with rooted(root) as root_fd:
        try:
            top = open_dir_at(root_fd, start)
        except OSError:
            return
        prefix = start.strip("/") + "/" if start.strip("/") else ""
        first = _scan(top, prefix, 0)
        frames: list[tuple[Folder, Iterator[str]]] = [(first, iter([]))]
        try:
            yield first
            frames[0] = (first, iter(first.dirs if max_depth > 0 else []))
            while frames:
                parent, pending = frames[-1]
                name = next(pending, None)
                if name is None:
                    _close(parent)
                    frames.pop()
                    continue
                try:
                    fd = os.open(name, DIR_FLAGS | os.O_NOFOLLOW | CLOEXEC, dir_fd=parent.fd)
                except OSError:  # gone, or swapped for a link since the scan: not entered
                    continue
                child = _scan(fd, f"{parent.rel}{name}/", parent.depth + 1)
                frames.append((child, iter([])))  # registered before the yield: closed even if the caller stops
                yield child
                if child.depth < max_depth:
                    frames[-1] = (child, iter(child.dirs))
        finally:
            for folder, _ in frames:
                _close(folder)


def _close(folder: Folder) -> None:
    if folder.fd >= 0:
        with contextlib.suppress(OSError):
            os.close(folder.fd)
        folder.fd = -1


def list_tree(root: Path, skip_dirs: frozenset[str] = frozenset(), max_depth: int = MAX_DEPTH) -> list[str]:
    """Every file and link under root (relative, sorted), folders in skip_dirs left out."""
    found: list[str] = []
    for folder in walk(root, max_depth=max_depth):
        folder.dirs[:] = [d for d in folder.dirs if d not in skip_dirs]
        found += [folder.rel + n for n in (*folder.files, *folder.links)]
    return sorted(found)
