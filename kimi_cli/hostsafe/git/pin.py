"""The git dir kimi names to host git, pinned by inode: a `.git` swapped while kimi works cannot redirect it.

On landlock a sandboxed command can write `.git` itself, so at any moment (a background task racing kimi) it
can swap `.git` for a symlink to another of the user's repositories, or for a `.git` file naming one
(renameat2 RENAME_EXCHANGE): between open_repo's checks and the spawn of git, and while git runs. Git opens
GIT_DIR by path, again and again, and confine.py used to grant Landlock writes on realpath(GIT_DIR). So:

- at session start the git dir and the common dir are opened (O_PATH) and held: their device and inode are
  this session's repository (the held descriptor also keeps the inode from being reused by a new folder);
- right before each spawn they are opened again, a folder inside the workspace without following any link
  (safe_fs: openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), and must be the very folders open_repo checked
  (and, where the session started with them, the pinned ones);
- git gets them as `/proc/self/fd/N`, a descriptor passed to it, for GIT_DIR and GIT_COMMON_DIR: every path git
  builds below them resolves through the descriptor to that folder, whatever `.git` names meanwhile, and a
  `commondir` file written into it is not read. Git keeps GIT_DIR as given when it runs in the top folder of the
  work tree (kimi runs it in the workspace); in a workspace that is a subfolder of its repository git
  canonicalises it, but that repository's `.git` lies outside the workspace, where no command writes;
- confine.py grants Landlock writes on the same descriptors, never on a path resolved by name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.hostsafe.git.location import RepoLocation, UnsafeRepository

DirId = tuple[int, int]  # (st_dev, st_ino)
PINNED_PATH = re.compile(r"^/proc/self/fd/(\d+)$")
O_PATH = getattr(os, "O_PATH", os.O_RDONLY)


def is_pinned(path: Path | str) -> bool:
    """Whether a path is a descriptor's `/proc/self/fd/N` (never resolved by name: it names an inode)."""
    return bool(PINNED_PATH.match(str(path)))


def _refused(path: Path, why: str) -> Exception:
    return UnsafeRepository(
        f"refused to run git: {path} {why} (a command may be swapping .git while kimi works: kimi would follow it "
        "into another repository). Nothing was run. If you changed .git yourself, start a new session."
    )


def open_dir(path: Path, workspace: Path | None) -> int:
    """An O_PATH descriptor of a git folder: beneath the workspace without following any link (a command may
    have made one), elsewhere as named (outside the workspace nothing a command writes is on the way)."""
    from kimi_cli.hostsafe import fs as safe_fs
    from kimi_cli.kernel.contain import below

    try:
        rel = below(workspace, path) if workspace is not None else None
        if workspace is not None and rel is not None:
            with safe_fs.rooted(workspace) as root_fd:
                return safe_fs.open_at(root_fd, rel, O_PATH | os.O_DIRECTORY)
        return os.open(path, O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except safe_fs.UnsafePath:
        raise _refused(path, "is now reached through a symlink") from None
    except NotADirectoryError:
        raise _refused(path, "is no longer a folder") from None
    except OSError as exc:
        raise _refused(path, f"cannot be opened now ({exc.strerror})") from None


def identity(fd: int) -> DirId:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def pin_start(location: RepoLocation) -> dict[Path, tuple[int, DirId]]:
    """The session's pins: each git folder's held descriptor and identity, taken at session start."""
    pins: dict[Path, tuple[int, DirId]] = {}
    for path in dict.fromkeys((location.git_dir, location.common_dir)):
        with contextlib.suppress(Exception):
            fd = open_dir(path, location.workspace)
            pins[path] = (fd, identity(fd))
    return pins


def release(pins: dict[Path, tuple[int, DirId]]) -> None:
    for fd, _ in pins.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    pins.clear()


def checked(location: RepoLocation, pins: dict[Path, tuple[int, DirId]]) -> RepoLocation:
    """open_repo's last step: the identities of the folders it checked, which must be the session's pinned
    ones where the session started with them (a `.git` replaced by another folder is not this repository)."""
    found: dict[Path, DirId] = {}
    for path in dict.fromkeys((location.git_dir, location.common_dir)):
        fd = open_dir(path, location.workspace)
        try:
            found[path] = identity(fd)
        finally:
            os.close(fd)
        start = pins.get(path)
        if start is not None and start[1] != found[path]:
            raise _refused(path, "is another folder than the one the session started with")
    return dataclasses.replace(location, git_dir_id=found[location.git_dir], common_dir_id=found[location.common_dir])


@dataclass(frozen=True)
class Pinned:
    """GIT_DIR and GIT_COMMON_DIR for one spawn, as descriptor paths, and the descriptors to pass to git."""

    git_dir: str
    common_dir: str
    fds: tuple[int, ...]


@contextlib.contextmanager
def pinned(location: RepoLocation) -> Iterator[Pinned]:
    """Open the repository's folders for one spawn and check they are the ones open_repo checked; the
    descriptors close when the call is over."""
    fds: dict[Path, int] = {}
    try:
        for path, want in ((location.git_dir, location.git_dir_id), (location.common_dir, location.common_dir_id)):
            if path not in fds:
                fds[path] = open_dir(path, location.workspace)
            if want is not None and identity(fds[path]) != want:
                raise _refused(path, "is another folder than the one kimi checked a moment ago")
        yield Pinned(
            f"/proc/self/fd/{fds[location.git_dir]}", f"/proc/self/fd/{fds[location.common_dir]}", tuple(fds.values())
        )
    finally:
        for fd in fds.values():
            os.close(fd)
