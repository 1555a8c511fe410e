"""Atomic file writes: a temp file beside the target, fsync, then rename over it.

New files get the mode an editor would give them (0666 & ~umask); an existing file keeps its mode and,
where the process may set it, its owner. A path that is a symlink is written through: the link stays.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def current_umask() -> int:
    """The process umask, read without changing it where the kernel says (Linux >= 4.7)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # fallback: read by setting, then restore at once
    os.umask(mask)
    return mask


def atomic_write(path: Path, data: bytes) -> None:
    path = path.resolve() if path.is_symlink() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        st: os.stat_result | None = path.stat()
    except FileNotFoundError:
        st = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".kimi-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if st is not None:
                with contextlib.suppress(PermissionError):
                    os.fchown(fh.fileno(), st.st_uid, st.st_gid)
                os.fchmod(fh.fileno(), st.st_mode & 0o7777)
            else:
                os.fchmod(fh.fileno(), 0o666 & ~current_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
