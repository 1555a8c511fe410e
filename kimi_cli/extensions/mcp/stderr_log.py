"""A stdio MCP server's stderr, kept in ~/.kimi/logs/mcp-NAME.log without growing without bound.

The server writes into a pipe; a reader thread copies it into the log and rotates it at `cap` bytes,
keeping one older file (`.1`). A server that writes 100 MB to stderr leaves at most 2 x cap on disk,
and a server that writes nothing costs one idle thread blocked in read().
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import TextIO

from kimi_cli.util.paths import PRIVATE_FILE, make_private_dir

LOG_CAP = 2 * 1024 * 1024
CHUNK = 64 * 1024


class CappedLog:
    """Hand `writer` to the child as its stderr; call `close_writer()` once the child holds its own copy."""

    def __init__(self, path: Path, cap: int = LOG_CAP) -> None:
        self.path = path
        self.cap = cap
        make_private_dir(path.parent)
        read_fd, write_fd = os.pipe()
        os.set_inheritable(read_fd, False)
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._thread = threading.Thread(target=self._copy, args=(read_fd,), name=f"kimi-{path.stem}", daemon=True)
        self._thread.start()

    def close_writer(self) -> None:
        """Drop kimi's copy of the write end: the log ends when the server's copy closes."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, PRIVATE_FILE)

    def _copy(self, read_fd: int) -> None:
        out = -1
        try:
            out = self._open()
            size = os.fstat(out).st_size
            while data := os.read(read_fd, CHUNK):
                if size + len(data) > self.cap:
                    os.close(out)
                    os.replace(self.path, self.path.with_name(self.path.name + ".1"))
                    out = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, PRIVATE_FILE)
                    size = 0
                    data = data[-self.cap :]
                os.write(out, data)
                size += len(data)
        except OSError:
            pass  # a full disk or a removed folder: the server's stderr is dropped, the server runs on
        finally:
            os.close(read_fd)
            if out >= 0:
                os.close(out)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)
