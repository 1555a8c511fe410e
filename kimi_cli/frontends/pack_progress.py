"""A progress line on stderr while a big repository is packed at session start (headless text mode).

Quiet for small repositories: nothing is printed until packing has taken a second. On a terminal the
line is rewritten in place; elsewhere (CI logs) each stage is printed once.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

QUIET_FOR = 1.0


class PackProgress:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.tty = self.stream.isatty()
        self.last_stage = ""
        self.shown = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        if time.monotonic() - self.started < QUIET_FOR:
            return
        if not self.tty and stage == self.last_stage:
            return
        self.last_stage = stage
        count = f" {done:,}/{total:,} files" if total else ""
        line = f"kimi: packing the repository: {stage}{count} ({time.monotonic() - self.started:.0f} s)"
        self.stream.write(("\r\x1b[K" + line) if self.tty else line + "\n")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        if self.shown and self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
