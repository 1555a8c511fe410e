"""Reading a settings file kimi finds at start (config.toml, mcp.json, a command, a skill, Claude Code's
settings.json): a regular file only, and only up to a size no real settings file reaches.

A repository can ship `.kimi/config.toml` as a link to /dev/zero, or a FIFO: a plain read then never ends
(memory grows until the process dies), or open blocks forever. Here a FIFO does not block (O_NONBLOCK), a
device or FIFO is refused by fstat, and a file over the cap is refused with its size; the caller turns the
OSError into its usual "cannot read" message, so the session starts (or stops cleanly) as for any bad file.
"""

from __future__ import annotations

import errno
import os
import stat

MAX_SETTINGS_BYTES = 4 * 1024 * 1024


def read_settings_bytes(path: str | os.PathLike[str], limit: int = MAX_SETTINGS_BYTES, head: bool = False) -> bytes:
    """The bytes of the regular file `path` (links followed: a user's dotfiles may link their config);
    OSError for anything else, or for a file over `limit` bytes (`head`: its first `limit` bytes instead)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, FIFO or socket)"
            raise OSError(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL, kind, str(path))
        if st.st_size > limit and not head:
            raise OSError(errno.EFBIG, f"{st.st_size:,} bytes, over the {limit:,}-byte limit for a settings file",
                          str(path))  # fmt: skip
        chunks, left = [], limit + (0 if head else 1)
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:  # it grew while being read
            raise OSError(errno.EFBIG, f"over the {limit:,}-byte limit for a settings file", str(path))
        return data
    finally:
        os.close(fd)


def read_settings_text(path: str | os.PathLike[str], limit: int = MAX_SETTINGS_BYTES) -> str:
    """The same, decoded as UTF-8 (a bad byte is replaced: the parser then names the place)."""
    return read_settings_bytes(path, limit).decode("utf-8", errors="replace")
