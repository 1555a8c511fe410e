"""Edits to one file never overlap: when subagents share a workspace, each path has a lock."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field


@dataclass
class FileLocks:
    """One lock per path, so two coder subagents never edit one file at once."""

    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def get(self, path: str) -> asyncio.Lock:
        return self.locks.setdefault(path, asyncio.Lock())


@contextlib.asynccontextmanager
async def file_lock(locks: FileLocks | None, path: str) -> AsyncIterator[None]:
    """Hold the path's lock (a call's ToolContext.file_locks; None: a workspace no other agent edits)."""
    if locks is None:
        yield
        return
    async with locks.get(path):
        yield
