"""WriteFile: create or replace (or append to) a file atomically."""

from __future__ import annotations

import asyncio
import difflib
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from kimi_cli.tools.base import Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.errors import ToolError
from kimi_cli.tools.file_lock import file_lock

DIFF_MAX_BYTES = 2 * 1024 * 1024  # an existing file larger than this is not read back for the diff
TEXTS_MAX_CHARS = 200_000  # whole old and new texts kept for front ends that show files whole (ACP's diffs)


class WriteFileParams(BaseModel):
    path: str = Field(description="Path relative to the workspace.")
    content: str = Field(description="The whole text.")
    mode: Literal["overwrite", "append"] = Field("overwrite", description="Replace the file, or add to its end.")


def unified_diff(old: str, new: str, rel: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{rel}", f"b/{rel}", n=3))


def diff_display(rel: str, old: str | None, new: str) -> dict[str, object]:
    """The display of an edit, made from the very text the tool read and wrote (None: a new file). Front ends
    show this, never a second read of the path, which a racing command could have swapped meanwhile."""
    display: dict[str, object] = {"kind": "diff", "path": rel, "diff": unified_diff(old or "", new, rel)}
    if len(old or "") <= TEXTS_MAX_CHARS and len(new) <= TEXTS_MAX_CHARS:
        display["old"], display["new"] = old, new
    return display


class WriteFile(Tool[WriteFileParams]):
    name = "WriteFile"
    description = (
        "Create a text file or replace one whole; atomic, parent folders created. To change part of an existing "
        "file use StrReplaceFile: rewriting it costs more and risks losing lines. "
        'Example: {"path": "tests/test_dates.py", "content": "import dates\\n..."}'
    )
    Params = WriteFileParams
    facts = ToolFacts(writes=True)

    def facts_for(self, params: WriteFileParams) -> ToolFacts:
        return self.facts.writing(params.path)

    async def run(self, params: WriteFileParams, ctx: ToolContext) -> ToolResult:
        path = ctx.workspace.resolve_write(params.path)  # never into .git or .kimi
        editor = ctx.editor_files
        async with file_lock(ctx.file_locks, str(path)):
            if editor is not None and not path.is_dir():
                old = await editor.read(path) if path.exists() else None
                if old is not None or not path.exists():  # the editor has it, or it is new: the editor writes
                    new = (old or "") + params.content if params.mode == "append" else params.content
                    await editor.write(path, new)
                    rel = ctx.workspace.relative(path)
                    return ToolResult(
                        f"wrote {rel} in the editor ({len(new.encode('utf-8'))} bytes, {new.count(chr(10))} lines)",
                        display=diff_display(rel, old, new),
                    )
            return await asyncio.to_thread(self._edit, path, params, ctx)  # a disk read never holds the loop

    def _edit(self, path: Path, params: WriteFileParams, ctx: ToolContext) -> ToolResult:
        """Read the old text and write the new one through folder descriptors: no link is followed."""
        from kimi_cli.hostsafe import fs as safe_fs

        rel = ctx.workspace.relative(path)
        target = ctx.workspace.rel(path)
        with safe_fs.rooted(ctx.workspace.root) as root_fd:
            try:
                fd, st = safe_fs.open_regular_at(root_fd, target)
            except FileNotFoundError:
                fd, st = -1, None
            except OSError as exc:
                raise ctx.workspace.refused(params.path, exc) from None
            raw, existed = b"", fd >= 0
            if fd >= 0:
                with os.fdopen(fd, "rb") as fh:
                    if st is not None and st.st_size > DIFF_MAX_BYTES:
                        return self._large(root_fd, target, rel, params, ctx)
                    raw = fh.read()
            try:
                old = raw.decode("utf-8")
            except UnicodeDecodeError:  # appending keeps the bytes that are there; no diff can be shown
                if params.mode == "append":
                    return self._large(root_fd, target, rel, params, ctx)
                old = ""
            new = old + params.content if params.mode == "append" else params.content
            try:
                safe_fs.write_atomic_at(root_fd, target, new.encode("utf-8"))
            except OSError as exc:
                raise write_error(params.path, exc, ctx) from None
        verb = "appended to" if params.mode == "append" else "wrote"
        return ToolResult(
            f"{verb} {rel} ({len(new.encode('utf-8'))} bytes, {new.count(chr(10))} lines)",
            display=diff_display(rel, old if existed else None, new),
        )

    @staticmethod
    def _large(root_fd: int, target: str, rel: str, params: WriteFileParams, ctx: ToolContext) -> ToolResult:
        """A big existing file is never loaded: append goes to its end, overwrite replaces it unread."""
        from kimi_cli.hostsafe import fs as safe_fs

        data = params.content.encode("utf-8")
        try:
            if params.mode == "append":
                safe_fs.append_at(root_fd, target, data)
            else:
                safe_fs.write_atomic_at(root_fd, target, data)
        except OSError as exc:
            raise write_error(params.path, exc, ctx) from None
        verb = "appended" if params.mode == "append" else "replaced the file with"
        return ToolResult(f"{verb} {len(data)} bytes ({rel}; too large or not UTF-8: no diff shown)")


def write_error(path: str, exc: OSError, ctx: ToolContext) -> ToolError:
    from kimi_cli.hostsafe.fs import UnsafePath

    if isinstance(exc, (UnsafePath, IsADirectoryError)):
        return ctx.workspace.refused(path, exc)
    return ToolError(f"cannot write {path}: {exc.strerror or exc}")
