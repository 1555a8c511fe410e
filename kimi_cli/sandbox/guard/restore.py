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

import collections
import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from kimi_cli.hostsafe import fs as safe_fs
from kimi_cli.hostsafe.protected import GIT_DIR, KIMI_DIR
from kimi_cli.kernel.contain import inside_any

MAX_MODULE_DIRS = 10_000  # folders under .git/modules looked at for submodule work trees

T = TypeVar("T")

MAX_GUARDED_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32  # below a guarded root: a deeper folder is kept or removed whole, never walked into
MAX_ENTRIES = 200_000  # per walk, shallowest first: what git runs (hooks/x, config) is always seen
MAX_STEPS = 2_000_000  # removals and renames for one folder before a racing writer is given up on
NOT_PUT_BACK = " (could NOT be put back: it is checked again before the next command)"
Stamp = tuple[int, int, int, int]

# rebase-merge, rebase-apply, sequencer: a todo list's `exec` lines run when the user types `git rebase
# --continue` (kimi's Git tool never starts a rebase, so none appears legitimately).
GIT_STRICT = ("config", "config.worktree", "hooks", "info", "commondir", "objects/info", "rebase-merge",
              "rebase-apply", "sequencer")  # fmt: skip
GIT_LOOSE = ("HEAD", "packed-refs", "refs")
WORKTREE_LINKS = ("gitdir", "commondir", "config.worktree")


def guarded_paths(workspace: Path, git: bool = True, kimi: bool = True) -> tuple[list[Path], list[Path]]:
    """(strict, loose) paths for a workspace. A .git *file* (a worktree or submodule pointer) is strict.

    Linked worktrees and submodules keep their own HEAD, index and refs under .git/worktrees and
    .git/modules, and the user may work in them meanwhile: only their links and config are guarded.
    """
    strict: list[Path] = []
    loose: list[Path] = []
    dot_git = workspace / GIT_DIR
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
    if git:
        strict += submodule_pointers(workspace)
    if kimi:
        strict.append(workspace / KIMI_DIR)
    return strict, loose


def submodule_pointers(workspace: Path) -> list[Path]:
    """The `.git` of every submodule the repository knew at session start, present or not: the paths in
    .gitmodules, and the work trees .git/modules/*/config names. It is a work-tree file (`gitdir: ...`),
    writable on every backend; pointed at a repository a command made, the user's own `git status` at the
    top runs a status in it, and with it that repository's core.fsmonitor, on the host."""
    found: dict[str, list[Path]] = {}

    def add(rel: str) -> None:
        rel = os.path.normpath(rel.strip().strip('"'))
        if not rel or rel == "." or rel.startswith(("..", "/")) or ".git" in rel.split("/") or rel in found:
            return
        pointer = workspace / rel / ".git"
        if pointer.is_dir() and not pointer.is_symlink():  # an embedded repository: its config, not its objects
            found[rel] = [pointer / name for name in GIT_STRICT]
        else:
            found[rel] = [pointer]

    with contextlib.suppress(OSError, ValueError):
        text = safe_fs.read_bytes(workspace, ".gitmodules", 1 << 20).decode("utf-8", "replace")
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "path":
                add(value)
    # Submodule git dirs: walked without following links (a link loop in .git/modules never ends) and with
    # a bound on folders; each config read through the no-follow reader (regular files, at most 1 MB).
    stack, seen = [".git/modules"], 0
    while stack and seen < MAX_MODULE_DIRS:
        folder = stack.pop()
        seen += 1
        with contextlib.suppress(OSError):
            for entry in os.scandir(workspace / folder):
                if not entry.is_dir(follow_symlinks=False):
                    continue
                rel = f"{folder}/{entry.name}"
                module = workspace / rel
                if not os.path.isfile(module / "HEAD") or os.path.islink(module / "HEAD"):
                    stack.append(rel)
                    continue
                stack.append(f"{rel}/modules")
                with contextlib.suppress(OSError, ValueError):
                    text = safe_fs.read_bytes(workspace, f"{rel}/config", 1 << 20).decode("utf-8", "replace")
                    for line in text.splitlines():
                        key, sep, value = line.partition("=")
                        if sep and key.strip() == "worktree":
                            tree = os.path.normpath(os.path.join(module, value.strip()))
                            add(os.path.relpath(tree, workspace))
    return [path for paths in found.values() for path in paths]


@dataclass
class _Snapshot:
    """Files and folders under `roots` (workspace-relative), read and repaired only through folder
    descriptors from the workspace root that never follow a link (safe_fs): a command racing us (a
    background task swapping .git/refs for a link to ~/.ssh or /etc) makes an operation fail, never
    read from or write to the place the link points at.

    A hostile command shapes these trees, so nothing here recurses or holds a descriptor per level: the
    walk is breadth first and stops MAX_DEPTH below a root (git's own layout is a few levels deep; a
    deeper folder is kept or removed whole), folders are removed by pulling their contents up one level
    at a time, and a folder made read-only (`chmod 555 .git/hooks`) is made writable again first."""

    workspace: Path
    roots: list[str]
    files: dict[str, tuple[Stamp, bytes | None]] = field(default_factory=dict)  # None: too big to keep
    dirs: dict[str, int] = field(default_factory=dict)  # folder -> its permission bits

    def walk(self, root_fd: int) -> tuple[dict[str, Stamp], dict[str, int]]:
        """Every file and folder under the roots, shallowest first: fstatat per entry, one open per folder."""
        files: dict[str, Stamp] = {}
        dirs: dict[str, int] = {}
        queue: collections.deque[tuple[str, int]] = collections.deque()
        for root in self.roots:
            try:
                st = safe_fs.lstat_at(root_fd, root)
            except OSError:
                continue
            self._note(root, st, 0, files, dirs, queue)
        seen = 0
        while queue and seen < MAX_ENTRIES:
            rel, depth = queue.popleft()
            try:
                fd = safe_fs.open_dir_at(root_fd, rel)
            except OSError:
                continue
            try:
                for name in os.listdir(fd):
                    seen += 1
                    with contextlib.suppress(OSError):
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                        self._note(f"{rel}/{name}", st, depth + 1, files, dirs, queue)
            finally:
                os.close(fd)
        return files, dirs

    @staticmethod
    def _note(
        rel: str,
        st: os.stat_result,
        depth: int,
        files: dict[str, Stamp],
        dirs: dict[str, int],
        queue: collections.deque[tuple[str, int]],
    ) -> None:
        if not stat.S_ISDIR(st.st_mode):
            files[rel] = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
            return
        dirs[rel] = stat.S_IMODE(st.st_mode)
        if depth < MAX_DEPTH:
            queue.append((rel, depth))

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
        """Put back what changed since remember(); the paths it repaired, and those it could not, marked."""
        repaired: list[str] = []
        _writable_ancestors(root_fd, self.roots)
        current, dirs = self.walk(root_fd)
        for rel in sorted(self.dirs, key=lambda r: r.count("/")):  # modes first: a 0555 folder blocks repairs
            if rel in dirs and dirs[rel] != self.dirs[rel]:
                with contextlib.suppress(OSError):
                    _chmod_dir(root_fd, rel, self.dirs[rel])
                    repaired.append(rel)
        removed: list[str] = []
        for rel in sorted(set(dirs) - set(self.dirs), key=lambda r: r.count("/")):
            if inside_any(rel, removed):
                continue  # went with the folder above it
            with contextlib.suppress(OSError):
                _remove_tree(root_fd, rel)
                removed.append(rel)
                repaired.append(rel)
        for rel in sorted(set(current) - set(self.files)):
            if inside_any(rel, removed):
                continue
            with contextlib.suppress(OSError):
                safe_fs.remove_at(root_fd, rel, prune=False)
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
        failed = self._still_wrong(root_fd) if repaired else set()
        return sorted({str(self.workspace / rel) + (NOT_PUT_BACK if rel in failed else "") for rel in repaired} |
                      {str(self.workspace / rel) + NOT_PUT_BACK for rel in failed})  # fmt: skip

    def _still_wrong(self, root_fd: int) -> set[str]:
        """What differs from the baseline after a repair (a racing writer, or something we could not undo)."""
        current, dirs = self.walk(root_fd)
        wrong = {rel for rel in set(current) ^ set(self.files)} | {rel for rel in set(dirs) ^ set(self.dirs)}
        for rel, (stamp, data) in self.files.items():
            if rel in current and current[rel] != stamp and data is not None:
                with contextlib.suppress(OSError):
                    now = (
                        safe_fs.readlink_at(root_fd, rel).encode()
                        if stat.S_ISLNK(current[rel][3])
                        else safe_fs.read_at(root_fd, rel, MAX_GUARDED_BYTES)[0]
                    )
                    if now != data or (current[rel][3] & 0o7777) != (stamp[3] & 0o7777):
                        wrong.add(rel)
        return wrong

    def accept(self, root_fd: int, rel: str, data: bytes) -> bool:
        """kimi itself wrote `data` to `rel` (a saved rule): it joins the baseline with the folders above it,
        but only if the file holds exactly that now (a writer racing kimi is not adopted)."""
        if not inside_any(rel, self.roots):
            return False
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            st = safe_fs.lstat_at(root_fd, folder)
            if not stat.S_ISDIR(st.st_mode):
                return False
            self.dirs[folder] = stat.S_IMODE(st.st_mode)
        st = safe_fs.lstat_at(root_fd, rel)
        if not stat.S_ISREG(st.st_mode) or safe_fs.read_at(root_fd, rel, MAX_GUARDED_BYTES)[0] != data:
            return False
        self.files[rel] = ((st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode), data)
        return True

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


def _writable_ancestors(root_fd: int, roots: list[str]) -> None:
    """The workspace and the folders above each guarded root must let us write (a command owns them and
    may chmod 555 .git, which would stop every repair below it)."""
    folders = {""}
    for root in roots:
        parts = root.split("/")[:-1]
        folders.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    for folder in sorted(folders, key=lambda r: r.count("/")):
        with contextlib.suppress(OSError):
            fd = safe_fs.open_dir_at(root_fd, folder) if folder else os.open(".", safe_fs.DIR_FLAGS, dir_fd=root_fd)
            try:
                mode = stat.S_IMODE(os.fstat(fd).st_mode)
                if mode & 0o700 != 0o700:
                    os.fchmod(fd, mode | 0o700)
            finally:
                os.close(fd)


def _chmod_dir(root_fd: int, rel: str, mode: int) -> None:
    fd = safe_fs.open_dir_at(root_fd, rel)
    try:
        os.fchmod(fd, mode & 0o1777)
    finally:
        os.close(fd)


def _remove_tree(root_fd: int, rel: str) -> None:
    """Remove a folder below the workspace (or whatever is there), from its parent's no-follow descriptor."""
    folder, name = safe_fs.split(rel)
    parent = safe_fs.open_dir_at(root_fd, folder)
    try:
        _remove_entry(parent, name)
    finally:
        os.close(parent)


def _remove_entry(parent: int, name: str) -> None:
    """Remove `name` in `parent`: a file or link is unlinked; a folder is emptied by pulling what its
    subfolders hold up into it (a rename, never a descent), so any depth takes two descriptors and no
    recursion; read-only folders are made writable first. A writer racing us ends it after MAX_STEPS."""
    st = os.stat(name, dir_fd=parent, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=parent)
        return
    top = os.open(name, safe_fs.DIR_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        _make_writable(top)
        token, steps = secrets.token_hex(6), 0
        while entries := os.listdir(top):
            for entry in entries:
                steps += 1
                if steps > MAX_STEPS:
                    raise OSError(errno.EAGAIN, "a writer keeps adding to the folder", name)
                if not stat.S_ISDIR(os.stat(entry, dir_fd=top, follow_symlinks=False).st_mode):
                    os.unlink(entry, dir_fd=top)
                    continue
                sub = os.open(entry, safe_fs.DIR_FLAGS | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top)
                try:
                    _make_writable(sub)
                    for inner in os.listdir(sub):
                        steps += 1
                        os.rename(inner, f".kimi-rm-{token}-{steps}", src_dir_fd=sub, dst_dir_fd=top)
                finally:
                    os.close(sub)
                os.rmdir(entry, dir_fd=top)
    finally:
        os.close(top)
    os.rmdir(name, dir_fd=parent)


def _make_writable(fd: int) -> None:
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if mode & 0o700 != 0o700:
        os.fchmod(fd, (mode | 0o700) & 0o1777)


def _put_file(root_fd: int, rel: str, data: bytes, mode: int) -> None:
    """Put `rel` back as `data` with exactly `mode` (never a setuid/setgid bit) through the one atomic write
    (safe_fs.replace_in: a temp name no command can guess, renamed within the parent's descriptor), so that
    whatever is at `rel`, a link included, is replaced, never written through; a folder there is removed."""
    folder, name = safe_fs.split(rel)
    parent = safe_fs.open_dir_at(root_fd, folder, create=True)

    def clear_folder() -> None:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                _remove_entry(parent, name)

    try:
        _make_writable(parent)
        safe_fs.replace_in(parent, name, data, mode & 0o1777, exact=True, before_rename=clear_folder)
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
        repaired = self._safely(self.strict.restore)
        self._safely(self.loose.remember)
        return repaired

    def after(self) -> list[str]:
        return sorted(set(self._safely(self.strict.restore)) | set(self._safely(self.loose.restore)))

    def accept(self, rel: str, data: bytes) -> bool:
        """kimi's own write of a guarded file (see _Snapshot.accept)."""
        try:
            return self._with_root(lambda root_fd: self.strict.accept(root_fd, rel, data))
        except OSError:
            return False

    def _safely(self, action: Callable[[int], T]) -> T | list[str]:
        """The guard must never take the Shell tool down (a command shapes what it walks): an unexpected
        failure is reported as a path that could not be checked, and the next command tries again."""
        try:
            return self._with_root(action)
        except Exception as exc:
            return [f"{self.workspace}/.git{NOT_PUT_BACK} [{type(exc).__name__}]"]


def repair_note(repaired: list[str], workspace: Path, by: str = "the command") -> str:
    names = ", ".join(os.path.relpath(p, workspace) for p in repaired[:5])
    more = f" and {len(repaired) - 5} more" if len(repaired) > 5 else ""
    return (
        f"\n[kimi: {by} changed {names}{more}; .git and .kimi are read-only in the sandbox, so they were put "
        "back. Use the Git tool for git operations.]"
    )
