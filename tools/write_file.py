"""WriteFile: create or replace (or append to) a file atomically."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from kimi_cli.tools.atomic import atomic_write
from kimi_cli.tools.base import Tool, ToolContext, ToolError, ToolFacts, ToolResult
from kimi_cli.tools.file_lock import file_lock

DIFF_MAX_BYTES = 2 * 1024 * 1024  # an existing file larger than this is not read back for the diff


class WriteFileParams(BaseModel):
    path: str = Field(description="File path, relative to the workspace root. Parents are created.")
    content: str = Field(description="The text to write.")
    mode: Literal["overwrite", "append"] = Field("overwrite", description="Replace the file or append to it.")


def unified_diff(old: str, new: str, rel: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{rel}", f"b/{rel}", n=3))


class WriteFile(Tool[WriteFileParams]):
    name = "WriteFile"
    description = (
        "Write a text file in the workspace (atomic: nothing is half-written). mode=overwrite replaces "
        "the file, mode=append adds to its end. Prefer StrReplaceFile for small edits to existing files."
    )
    Params = WriteFileParams
    facts = ToolFacts(writes=True)

    def facts_for(self, params: WriteFileParams) -> ToolFacts:
        return self.facts.writing(params.path)

    async def run(self, params: WriteFileParams, ctx: ToolContext) -> ToolResult:
        from kimi_cli.tools.editor_files import editor_files

        path = ctx.workspace.resolve(params.path)
        editor = editor_files(ctx)
        async with file_lock(ctx, str(path)):
            if editor is not None and not path.is_dir():
                old = await editor.read(path) if path.exists() else ""
                new = (old or "") + params.content if params.mode == "append" else params.content
                await editor.write(path, new)
                rel = ctx.workspace.relative(path)
                return ToolResult(
                    f"wrote {rel} in the editor ({len(new.encode('utf-8'))} bytes, {new.count(chr(10))} lines)",
                    display={"kind": "diff", "path": rel, "diff": unified_diff(old or "", new, rel)},
                )
            return self._edit(path, params, ctx)

    def _edit(self, path: Path, params: WriteFileParams, ctx: ToolContext) -> ToolResult:
        if path.is_dir():
            raise ToolError(f"{params.path} is a directory")
        rel = ctx.workspace.relative(path)
        if path.exists() and path.stat().st_size > DIFF_MAX_BYTES:
            return self._large(path, rel, params)
        old = ""
        if path.exists():
            try:
                old = path.read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                old = ""
            except OSError as exc:
                raise ToolError(f"cannot read {params.path}: {exc.strerror}") from None
        new = old + params.content if params.mode == "append" else params.content
        try:
            atomic_write(path, new.encode("utf-8"))
        except OSError as exc:
            raise ToolError(f"cannot write {params.path}: {exc.strerror}") from None
        verb = "appended to" if params.mode == "append" else "wrote"
        return ToolResult(
            f"{verb} {rel} ({len(new.encode('utf-8'))} bytes, {new.count(chr(10))} lines)",
            display={"kind": "diff", "path": rel, "diff": unified_diff(old, new, rel)},
        )

    @staticmethod
    def _large(path: Path, rel: str, params: WriteFileParams) -> ToolResult:
        """A big existing file is never loaded: append goes to its end, overwrite replaces it unread."""
        data = params.content.encode("utf-8")
        try:
            if params.mode == "append":
                with path.open("ab") as fh:
                    fh.write(data)
            else:
                atomic_write(path, data)
        except OSError as exc:
            raise ToolError(f"cannot write {params.path}: {exc.strerror}") from None
        verb = "appended" if params.mode == "append" else "replaced the large file with"
        return ToolResult(f"{verb} {len(data)} bytes ({rel}; too large to show a diff)")
