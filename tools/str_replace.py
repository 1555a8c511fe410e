"""StrReplaceFile: exact-match string edits, all applied or none."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from pydantic import BaseModel, Field, model_validator

from kimi_cli.hostsafe.files import looks_binary
from kimi_cli.tools.base import Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.errors import ToolError
from kimi_cli.tools.file_lock import file_lock
from kimi_cli.tools.write_file import diff_display

MAX_EDIT_BYTES = 20 * 1024 * 1024  # larger files are refused rather than loaded (and written) whole


class Edit(BaseModel):
    old: str = Field(description="Exact current text, unique in the file.")
    new: str = Field(description="Replacement.")
    replace_all: bool = Field(False, description="Replace every match.")


class StrReplaceParams(BaseModel):
    path: str = Field(description="Path relative to the workspace.")
    edit: Edit | None = Field(None, description="One edit.")
    edits: list[Edit] | None = Field(None, description="Several edits, in order.")

    @model_validator(mode="after")
    def _one_of(self) -> StrReplaceParams:
        if (self.edit is None) == (not self.edits):
            raise ValueError("give exactly one of `edit` or a non-empty `edits` list")
        return self


class StrReplaceFile(Tool[StrReplaceParams]):
    name = "StrReplaceFile"
    description = (
        "Change part of a file: each `old` must match the file's current text exactly once, whitespace "
        "included (unless replace_all); include enough surrounding lines to make it unique. Put several edits to "
        "one file in one call (`edits`): all apply or none do. Files over 20 MiB are refused. "
        'Example: {"path": "app/calc.py", "edit": {"old": "return a - b", "new": "return a + b"}}'
    )
    Params = StrReplaceParams
    facts = ToolFacts(reads=True, writes=True)

    def facts_for(self, params: StrReplaceParams) -> ToolFacts:
        return self.facts.writing(params.path)

    async def run(self, params: StrReplaceParams, ctx: ToolContext) -> ToolResult:
        path = ctx.workspace.resolve_write(params.path)  # never into .git or .kimi
        editor = ctx.editor_files
        async with file_lock(ctx.file_locks, str(path)):
            if editor is not None and path.is_file():
                old_text = await editor.read(path)
                if old_text is not None:
                    text, total = apply_edits(old_text, params)
                    await editor.write(path, text)
                    rel = ctx.workspace.relative(path)
                    return ToolResult(
                        f"edited {rel} in the editor: {total} replacement(s)",
                        display=diff_display(rel, old_text, text),
                    )
            return await asyncio.to_thread(self._edit, path, params, ctx)  # a disk read never holds the loop

    def _edit(self, path: Path, params: StrReplaceParams, ctx: ToolContext) -> ToolResult:
        from kimi_cli.hostsafe import fs as safe_fs
        from kimi_cli.tools.write_file import write_error

        target = ctx.workspace.rel(path)
        with safe_fs.rooted(ctx.workspace.root) as root_fd:  # read and write through descriptors: no link followed
            try:
                fd, st = safe_fs.open_regular_at(root_fd, target)
            except FileNotFoundError:
                raise ToolError(f"{params.path} does not exist or is not a file") from None
            except OSError as exc:
                raise ctx.workspace.refused(params.path, exc) from None
            with os.fdopen(fd, "rb") as fh:
                if st.st_size > MAX_EDIT_BYTES:
                    raise ToolError(
                        f"{params.path} is {st.st_size / 1e6:.0f} MB, over the {MAX_EDIT_BYTES // 2**20} MiB limit "
                        "for StrReplaceFile, which loads the whole file; edit it with a Shell command (sed, a script) "
                        "instead"
                    )
                data = fh.read()
            if looks_binary(data):
                raise ToolError(f"{params.path} is a binary file; it cannot be edited as text")
            try:
                old_text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise ToolError(f"{params.path} is not valid UTF-8; editing it as text would corrupt it") from None
            text, total = apply_edits(old_text, params)
            try:
                safe_fs.write_atomic_at(root_fd, target, text.encode("utf-8"))
            except OSError as exc:
                raise write_error(params.path, exc, ctx) from None
        rel = ctx.workspace.relative(path)
        return ToolResult(
            f"edited {rel}: {total} replacement(s)",
            display=diff_display(rel, old_text, text),
        )


def apply_edits(old_text: str, params: StrReplaceParams) -> tuple[str, int]:
    """All edits in order, or a ToolError and nothing changed."""
    edits = [params.edit] if params.edit else list(params.edits or [])
    text = old_text
    total = 0
    for number, edit in enumerate(edits, start=1):
        if not edit.old:
            raise ToolError(f"edit {number}: `old` is empty")
        count = text.count(edit.old)
        if count == 0:
            raise ToolError(f"edit {number}: `old` text not found in {params.path}; nothing was changed")
        if count > 1 and not edit.replace_all:
            raise ToolError(
                f"edit {number}: `old` occurs {count} times in {params.path}; add context to make it "
                "unique or set replace_all; nothing was changed"
            )
        text = text.replace(edit.old, edit.new) if edit.replace_all else text.replace(edit.old, edit.new, 1)
        total += count if edit.replace_all else 1
    return text, total
