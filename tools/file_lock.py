"""Edits to one file never overlap: when subagents share a workspace, each path has a lock."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from kimi_cli.tools.base import ToolContext


@contextlib.asynccontextmanager
async def file_lock(ctx: ToolContext, path: str) -> AsyncIterator[None]:
    locks = ctx.services.get("file_locks")
    if locks is None:
        yield
        return
    async with locks.get(path):
        yield
