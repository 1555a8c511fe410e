"""Keeps a workspace's .git read-only where the kernel cannot: checked before and restored after each command.

Landlock cannot make a folder read-only inside a writable one, so with the landlock backend a command
could write .git/hooks/pre-commit and have it run on the host at the user's next commit. The guard
remembers config, HEAD, refs, hooks and info before each command and puts back whatever changed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_GUARDED_BYTES = 4 * 1024 * 1024


@dataclass
class GitGuard:
    roots: list[Path]  # files and folders under .git that commands must not change
    _saved: dict[Path, tuple[tuple[int, int, int, int], bytes]] = field(default_factory=dict)

    def _walk(self) -> dict[Path, tuple[int, int, int, int]]:
        found: dict[Path, tuple[int, int, int, int]] = {}
        for root in self.roots:
            stack = [root]
            while stack:
                path = stack.pop()
                try:
                    st = path.lstat()
                except OSError:
                    continue
                if path.is_dir() and not path.is_symlink():
                    with contextlib.suppress(OSError):
                        stack.extend(path.iterdir())
                    continue
                found[path] = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)
        return found

    def remember(self) -> None:
        """Take the baseline (the Git tool may have changed .git since the last command)."""
        current = self._walk()
        saved: dict[Path, tuple[tuple[int, int, int, int], bytes]] = {}
        for path, stamp in current.items():
            old = self._saved.get(path)
            if old is not None and old[0] == stamp:
                saved[path] = old
                continue
            with contextlib.suppress(OSError):
                if stamp[1] <= MAX_GUARDED_BYTES:
                    saved[path] = (stamp, os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
        self._saved = saved

    def restore(self) -> list[str]:
        """Put back what changed since remember(); returns the paths it had to repair."""
        repaired: list[str] = []
        current = self._walk()
        for path in sorted(set(current) - set(self._saved)):
            with contextlib.suppress(OSError):
                path.unlink()
                repaired.append(str(path))
        for path, (stamp, data) in self._saved.items():
            if current.get(path) == stamp:
                continue
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                elif path.is_symlink():
                    path.unlink()
                path.parent.mkdir(parents=True, exist_ok=True)
                if stat.S_ISLNK(stamp[3]):
                    os.symlink(data.decode(), path)
                else:
                    path.write_bytes(data)
                    os.chmod(path, stamp[3] & 0o7777)
                repaired.append(str(path))
        if repaired:
            self._saved = {}
            self.remember()
        return repaired
