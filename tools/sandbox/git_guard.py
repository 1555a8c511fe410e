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
from dataclasses import dataclass, field
from pathlib import Path

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
    roots: list[Path]
    files: dict[Path, tuple[Stamp, bytes | None]] = field(default_factory=dict)  # None: too big to keep
    dirs: set[Path] = field(default_factory=set)

    def walk(self) -> tuple[dict[Path, Stamp], set[Path]]:
        files: dict[Path, Stamp] = {}
        dirs: set[Path] = set()
        for root in self.roots:
            stack = [root]
            while stack:
                path = stack.pop()
                try:
                    st = path.lstat()
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    dirs.add(path)
                    with contextlib.suppress(OSError):
                        stack.extend(path.iterdir())
                    continue
                files[path] = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
        return files, dirs

    def remember(self) -> None:
        current, self.dirs = self.walk()
        files: dict[Path, tuple[Stamp, bytes | None]] = {}
        for path, stamp in current.items():
            old = self.files.get(path)
            if old is not None and old[0] == stamp:
                files[path] = old
                continue
            data: bytes | None = None
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(stamp[3]):
                    data = os.readlink(path).encode()
                elif stamp[1] <= MAX_GUARDED_BYTES:
                    data = path.read_bytes()
            files[path] = (stamp, data)
        self.files = files

    def restore(self) -> list[str]:
        """Put back what changed since remember(); returns the paths it had to repair."""
        repaired: list[str] = []
        current, dirs = self.walk()
        for path in sorted(set(current) - set(self.files)):
            with contextlib.suppress(OSError):
                path.unlink()
                repaired.append(str(path))
        for path, (stamp, data) in self.files.items():
            if current.get(path) == stamp:
                continue
            repaired.append(str(path))
            if data is None:
                continue  # too big to have kept: reported, not restored
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                elif path.exists() or path.is_symlink():
                    path.unlink()
                path.parent.mkdir(parents=True, exist_ok=True)
                if stat.S_ISLNK(stamp[3]):
                    os.symlink(data.decode(), path)
                else:
                    path.write_bytes(data)
                    os.chmod(path, stamp[3] & 0o7777)
        for path in sorted(dirs - self.dirs, key=lambda p: len(p.parts), reverse=True):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
                repaired.append(str(path))
        if repaired:
            self.remember()
        return sorted(set(repaired))


class GitGuard:
    """The strict baseline is the session's start; the loose one is taken before each command."""

    def __init__(self, strict: list[Path], loose: list[Path] | None = None) -> None:
        self.strict = _Snapshot(strict)
        self.strict.remember()
        self.loose = _Snapshot(loose or [])

    def before(self) -> list[str]:
        """Repair what changed since the last command (a background task), then take the loose baseline."""
        repaired = self.strict.restore()
        self.loose.remember()
        return repaired

    def after(self) -> list[str]:
        return sorted(set(self.strict.restore()) | set(self.loose.restore()))


def repair_note(repaired: list[str], workspace: Path, by: str = "the command") -> str:
    names = ", ".join(os.path.relpath(p, workspace) for p in repaired[:5])
    more = f" and {len(repaired) - 5} more" if len(repaired) > 5 else ""
    return (
        f"\n[kimi: {by} changed {names}{more}; .git and .kimi are read-only in the sandbox, so they were put "
        "back. Use the Git tool for git operations.]"
    )
