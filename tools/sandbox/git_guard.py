"""Keeps a workspace's .git and .kimi read-only where mounts cannot: checked, and restored, around each command.

Landlock cannot make a folder read-only inside a writable one, so with the landlock backend a command
could write .git/hooks/pre-commit (run on the host at the user's next commit), point .git/commondir or
objects/info/alternates outside the workspace, or plant .kimi/config.toml and .kimi/mcp.json. bwrap
and Docker mount an existing .kimi read-only, but a missing one cannot be mounted without creating it
in the user's tree: there the guard watches for it.

Two kinds of paths:
- strict (config, hooks, info, commondir, alternates, worktrees, modules, .kimi): kimi's own tools never
  change them, so the baseline is the session's start and any change, whenever made (a background task
  too), is put back before and after each command;
- loose (HEAD, refs, packed-refs): the Git tool changes them, so the baseline is taken before each
  command and only what the command itself changed is put back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from kimi_cli.tools import safe_fs

T = TypeVar("T")

MAX_GUARDED_BYTES = 4 * 1024 * 1024
Stamp = tuple[int, int, int, int]

GIT_STRICT = ("config", "config.worktree", "hooks", "info", "commondir", "objects/info")
GIT_LOOSE = ("HEAD", "packed-refs", "refs")
WORKTREE_LINKS = ("gitdir", "commondir", "config.worktree")


def guarded_paths(workspace: Path, git: bool = True, kimi: bool = True) -> tuple[list[Path], list[Path]]:
    """(strict, loose) paths for a workspace. A .git *file* (a worktree or submodule pointer) is strict.

    Linked worktrees and submodules keep their own HEAD, index and refs under .git/worktrees and
    .git/modules, and the user may work in them meanwhile: only their links and config are guarded.
    """
    strict: list[Path] = []
    loose: list[Path] = []
    dot_git = workspace / ".git"
    if git and (dot_git.is_symlink() or dot_git.is_file()):
        strict.append(dot_git)
    elif git and dot_git.is_dir():
        strict += [dot_git / name for name in GIT_STRICT]
        loose += [dot_git / name for name in GIT_LOOSE]
        with contextlib.suppress(OSError):
            for tree in (dot_git / "worktrees").iterdir():
                strict += [tree / name for name in WORKTREE_LINKS]
        stack = [dot_git / "modules"]
        while stack:  # nested submodules: .git/modules/a/modules/b
            with contextlib.suppress(OSError):
                for module in stack.pop().iterdir():
                    if (module / "HEAD").is_file():
                        strict += [module / name for name in GIT_STRICT]
                    stack.append(module / "modules" if (module / "HEAD").is_file() else module)
    if kimi:
        strict.append(workspace / ".kimi")
    return strict, loose


@dataclass
class _Snapshot:
    """Files and folders under `roots` (workspace-relative), read and repaired only through folder
    descriptors from the workspace root that never follow a link (safe_fs): a command racing us (a
    background task swapping .git/refs for a link to ~/.ssh or /etc) makes an operation fail, never
    read from or write to the place the link points at."""

    workspace: Path
    roots: list[str]
    files: dict[str, tuple[Stamp, bytes | None]] = field(default_factory=dict)  # None: too big to keep
    dirs: set[str] = field(default_factory=set)

    def walk(self, root_fd: int) -> tuple[dict[str, Stamp], set[str]]:
        """Every file and folder under the roots: one no-follow open per folder, fstatat per entry."""
        files: dict[str, Stamp] = {}
        dirs: set[str] = set()
        for root in self.roots:
            folder, name = safe_fs.split(root)
            try:
                parent = safe_fs.open_at(root_fd, folder, safe_fs.DIR_FLAGS)
            except OSError:
                continue
            try:
                self._entry(parent, name, root, files, dirs)
            finally:
                os.close(parent)
        return files, dirs

    def _entry(self, parent: int, name: str, rel: str, files: dict[str, Stamp], dirs: set[str]) -> None:
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError:
            return
        if not stat.S_ISDIR(st.st_mode):
            files[rel] = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
            return
        dirs.add(rel)
        try:
            fd = os.open(name, safe_fs.DIR_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        except OSError:
            return
        try:
            for child in os.listdir(fd):
                self._entry(fd, child, f"{rel}/{child}", files, dirs)
        finally:
            os.close(fd)

    def remember(self, root_fd: int) -> None:
        current, self.dirs = self.walk(root_fd)
        files: dict[str, tuple[Stamp, bytes | None]] = {}
        for rel, stamp in current.items():
            old = self.files.get(rel)
            if old is not None and old[0] == stamp:
                files[rel] = old
                continue
            data: bytes | None = None
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(stamp[3]):
                    data = safe_fs.readlink_at(root_fd, rel).encode()
                elif stat.S_ISREG(stamp[3]) and stamp[1] <= MAX_GUARDED_BYTES:
                    data = safe_fs.read_at(root_fd, rel, MAX_GUARDED_BYTES)[0]
            files[rel] = (stamp, data)
        self.files = files

    def restore(self, root_fd: int) -> list[str]:
        """Put back what changed since remember(); returns the paths it had to repair."""
        repaired: list[str] = []
        current, dirs = self.walk(root_fd)
        for rel in sorted(set(current) - set(self.files)):
            with contextlib.suppress(OSError):
                safe_fs.remove_at(root_fd, rel, prune=False)
                repaired.append(rel)
        for rel in sorted(dirs - self.dirs, key=lambda r: r.count("/"), reverse=True):
            with contextlib.suppress(OSError):
                _remove_tree(root_fd, rel)
                repaired.append(rel)
        for rel, (stamp, data) in self.files.items():
            if current.get(rel) == stamp:
                continue
            repaired.append(rel)
            if data is None:
                continue  # too big to have kept: reported, not restored
            with contextlib.suppress(OSError):
                if rel in dirs:
                    _remove_tree(root_fd, rel)
                if stat.S_ISLNK(stamp[3]):
                    safe_fs.symlink_at(root_fd, rel, data.decode())
                else:
                    _put_file(root_fd, rel, data, stamp[3] & 0o7777)
        self._refresh(root_fd, [rel for rel in repaired if rel in self.files])
        return sorted({str(self.workspace / rel) for rel in repaired})

    def _refresh(self, root_fd: int, rels: list[str]) -> None:
        """New stamps for what we just put back, where it holds what we wrote. Never a new baseline: a
        writer racing us (a background task) would have its change adopted; it is repaired next time."""
        for rel in rels:
            _stamp, data = self.files[rel]
            with contextlib.suppress(OSError):
                st = safe_fs.lstat_at(root_fd, rel)
                if stat.S_ISLNK(st.st_mode):
                    now = safe_fs.readlink_at(root_fd, rel).encode()
                else:
                    now = safe_fs.read_at(root_fd, rel, MAX_GUARDED_BYTES)[0]
                if now == data:
                    self.files[rel] = ((st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode), data)


def _remove_tree(root_fd: int, rel: str) -> None:
    """rmtree of a folder below the workspace, from its parent's no-follow descriptor."""
    folder, name = safe_fs.split(rel)
    parent = safe_fs.open_dir_at(root_fd, folder)
    try:
        shutil.rmtree(name, dir_fd=parent)
    finally:
        os.close(parent)


def _put_file(root_fd: int, rel: str, data: bytes, mode: int) -> None:
    """Write a temp file in the parent's descriptor, set its mode on the descriptor, rename it into place:
    whatever is at `rel` (a link included) is replaced, never written through."""
    folder, name = safe_fs.split(rel)
    parent = safe_fs.open_dir_at(root_fd, folder, create=True)
    try:
        tmp = f".{name[:60]}.{os.getpid()}.kimi-guard"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                os.fchmod(fh.fileno(), mode & 0o1777)  # never a setuid/setgid bit
            with contextlib.suppress(IsADirectoryError, OSError):
                if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                    shutil.rmtree(name, dir_fd=parent)
            os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
    finally:
        os.close(parent)


class GitGuard:
    """The strict baseline is the session's start; the loose one is taken before each command."""

    def __init__(self, workspace: Path, strict: list[Path], loose: list[Path] | None = None) -> None:
        self.workspace = workspace
        rel = [str(p.relative_to(workspace)) for p in strict]
        self.strict = _Snapshot(workspace, rel)
        self.loose = _Snapshot(workspace, [str(p.relative_to(workspace)) for p in loose or []])
        self._with_root(self.strict.remember)

    def _with_root(self, action: Callable[[int], T]) -> T:
        with safe_fs.rooted(self.workspace) as root_fd:
            return action(root_fd)

    def before(self) -> list[str]:
        """Repair what changed since the last command (a background task), then take the loose baseline."""
        repaired = self._with_root(self.strict.restore)
        self._with_root(self.loose.remember)
        return repaired

    def after(self) -> list[str]:
        return sorted(set(self._with_root(self.strict.restore)) | set(self._with_root(self.loose.restore)))


def repair_note(repaired: list[str], workspace: Path, by: str = "the command") -> str:
    names = ", ".join(os.path.relpath(p, workspace) for p in repaired[:5])
    more = f" and {len(repaired) - 5} more" if len(repaired) > 5 else ""
    return (
        f"\n[kimi: {by} changed {names}{more}; .git and .kimi are read-only in the sandbox, so they were put "
        "back. Use the Git tool for git operations.]"
    )
