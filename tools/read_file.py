"""ReadFile: numbered lines of a text file, a window at a time, reading no more than it returns."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from typing import BinaryIO

from pydantic import BaseModel, Field

from kimi_cli.hostsafe.files import SNIFF_BYTES, looks_binary
from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.errors import ToolError
from kimi_cli.tools.read_roots import granted

MAX_LINE_CHARS = 2000
MAX_LINE_BYTES = 8 * MAX_LINE_CHARS  # a longer line is cut, and the rest of it skipped without buffering
MAX_OUTPUT_CHARS = 100_000
COUNT_ALL_BELOW = 4_000_000  # smaller files are read to the end so the total line count can be given
CHUNK = 65536


class ReadFileParams(BaseModel):
    path: str = Field(description="Path relative to the workspace.")
    line_offset: int = Field(1, ge=1, description="First line (1-based).")
    n_lines: int = Field(1000, ge=1, le=5000, description="How many lines.")


def iter_lines(head: bytes, fh: BinaryIO) -> Iterator[bytes]:
    """Lines of a stream (no seeking: pipes work), in bounded memory whatever the line lengths."""
    buf = bytearray(head)
    start = 0
    skipping = False
    while True:
        newline = buf.find(b"\n", start)
        if newline >= 0:
            if not skipping:
                yield bytes(buf[start : newline + 1])
            skipping = False
            start = newline + 1
            continue
        if not skipping and len(buf) - start > MAX_LINE_BYTES:
            yield bytes(buf[start : start + MAX_LINE_BYTES])
            skipping = True
        if skipping:
            buf.clear()
        else:
            del buf[:start]
        start = 0
        chunk = fh.read(CHUNK)
        if not chunk:
            break
        buf += chunk
    if not skipping and start < len(buf):
        yield bytes(buf[start:])


class ReadFile(Tool[ReadFileParams]):
    name = "ReadFile"
    description = (
        "Read a text file as numbered lines (`N<TAB>text`): 1000 lines from line_offset by default; lines over "
        "2000 chars are cut. Files the pack holds in full are already in your context: read a range you need, "
        "or the lines you will edit in a file you hold only in outline. Several ReadFile calls in one answer run "
        "in parallel. Not for images (ReadMediaFile) or folders (Glob). "
        'Example: {"path": "src/app.py", "line_offset": 120, "n_lines": 60}'
    )
    Params = ReadFileParams
    facts = READS

    def facts_for(self, params: ReadFileParams) -> ToolFacts:
        return READS.reading(params.path)

    async def run(self, params: ReadFileParams, ctx: ToolContext) -> ToolResult:
        import asyncio
        import io

        editor = ctx.editor_files
        if editor is not None and granted(ctx.read_roots, params.path) is None:
            path = ctx.workspace.resolve(params.path)
            text = await editor.read(path)
            if text is not None:  # the editor's buffer, saved or not
                data = text.encode("utf-8")
                lines, total, bad, more = self._window(b"", io.BytesIO(data), params, count_all=True)
                notes = self._notes(params, lines, total, bad, more, len(data))
                return ToolResult("\n".join(lines + notes), display=_display(params, lines, total))
        # Off the event loop: a slow disk, a FIFO or a huge file must not stall the session or other reads.
        return await asyncio.to_thread(self._read, params, ctx)

    def _read(self, params: ReadFileParams, ctx: ToolContext) -> ToolResult:
        from kimi_cli.hostsafe.fs import open_regular

        outside = granted(ctx.read_roots, params.path)  # a folder the session lets ReadFile read (a user's skill)
        if outside is not None:
            root, rel = outside
        else:
            root, rel = ctx.workspace.root, ctx.workspace.rel(ctx.workspace.resolve(params.path))
        try:  # no link followed from here on; type and size come from the opened descriptor
            fd, st = open_regular(root, rel)
        except OSError as exc:
            if exc.errno == errno.EISDIR:
                raise ToolError(f"{params.path} is a directory; use Glob to list files") from None
            raise ctx.workspace.refused(params.path, exc) from None
        with os.fdopen(fd, "rb") as fh:
            size = st.st_size
            head = fh.read(SNIFF_BYTES)
            if looks_binary(head):
                raise ToolError(f"{params.path} is a binary file; ReadFile only shows text")
            lines, total, bad_utf8, more = self._window(head, fh, params, count_all=size < COUNT_ALL_BELOW)
        notes = self._notes(params, lines, total, bad_utf8, more, size)
        known = size < COUNT_ALL_BELOW or not more
        return ToolResult("\n".join(lines + notes), display=_display(params, lines, total if known else None))

    def _window(
        self, head: bytes, fh: BinaryIO, params: ReadFileParams, count_all: bool
    ) -> tuple[list[str], int, bool, bool]:
        lines: list[str] = []
        total = chars = 0
        bad_utf8 = more = False
        end = params.line_offset + params.n_lines
        for number, raw in enumerate(iter_lines(head, fh), start=1):
            total = number
            if number >= end or chars > MAX_OUTPUT_CHARS:
                more = True
                if not count_all:
                    break
                continue
            if number < params.line_offset:
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text, bad_utf8 = raw.decode("utf-8", errors="replace"), True
            text = text.rstrip("\r\n")
            if len(text) > MAX_LINE_CHARS or len(raw) >= MAX_LINE_BYTES:
                text = text[:MAX_LINE_CHARS] + f" [... line cut at {MAX_LINE_CHARS} chars]"
            chars += len(text)
            lines.append(f"{number:6d}\t{text}")
        return lines, total, bad_utf8, more

    @staticmethod
    def _notes(
        params: ReadFileParams, lines: list[str], total: int, bad_utf8: bool, more: bool, size: int
    ) -> list[str]:
        notes = []
        shown_to = params.line_offset + len(lines) - 1
        if total == 0:
            notes.append("(empty file)")
        elif not lines:
            notes.append(f"(the file has {total} lines; line_offset {params.line_offset} is past the end)")
        elif more and total > shown_to and size < COUNT_ALL_BELOW:
            notes.append(f"(showing lines {params.line_offset}-{shown_to} of {total}; read on with line_offset)")
        elif more:
            notes.append(
                f"(showing lines {params.line_offset}-{shown_to}; the file goes on ({size:,} bytes in all): "
                f"read on with line_offset={shown_to + 1})"
            )
        if bad_utf8:
            notes.append("(not valid UTF-8: undecodable bytes are shown as U+FFFD)")
        return notes


def _display(params: ReadFileParams, lines: list[str], total: int | None) -> dict[str, object]:
    """What the UI says about the read: which lines of how many (None: the file was not read to its end)."""
    first = params.line_offset
    return {"kind": "read", "path": params.path, "lines": len(lines), "first": first,
            "last": first + len(lines) - 1, "total": total}  # fmt: skip
