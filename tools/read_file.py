"""ReadFile: numbered lines of a text file, a window at a time."""

from __future__ import annotations

from pydantic import BaseModel, Field

from kimi_cli.tools.base import Tool, ToolContext, ToolError, ToolResult
from kimi_cli.tools.files import SNIFF_BYTES, looks_binary

MAX_LINE_CHARS = 2000
MAX_OUTPUT_CHARS = 100_000


class ReadFileParams(BaseModel):
    path: str = Field(description="File path, relative to the workspace root.")
    line_offset: int = Field(1, ge=1, description="First line to read (1-based).")
    n_lines: int = Field(1000, ge=1, le=5000, description="How many lines to read.")


class ReadFile(Tool[ReadFileParams]):
    name = "ReadFile"
    description = (
        "Read a text file from the workspace. Returns numbered lines (`line_no<TAB>text`). "
        "Use line_offset and n_lines to page through long files. Binary files are refused; "
        "use ReadMediaFile for images."
    )
    Params = ReadFileParams

    async def run(self, params: ReadFileParams, ctx: ToolContext) -> ToolResult:
        path = ctx.workspace.resolve(params.path)
        if not path.exists():
            raise ToolError(f"{params.path} does not exist")
        if path.is_dir():
            raise ToolError(f"{params.path} is a directory; use Glob to list files")
        try:
            fh = path.open("rb")
        except OSError as exc:
            raise ToolError(f"cannot read {params.path}: {exc.strerror}") from None
        with fh:
            if looks_binary(fh.read(SNIFF_BYTES)):
                raise ToolError(f"{params.path} is a binary file; ReadFile only shows text")
            fh.seek(0)
            lines, total, bad_utf8, size = [], 0, False, 0
            end = params.line_offset + params.n_lines
            for number, raw in enumerate(fh, start=1):
                total = number
                if number < params.line_offset or number >= end or size > MAX_OUTPUT_CHARS:
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    text, bad_utf8 = raw.decode("utf-8", errors="replace"), True
                text = text.rstrip("\r\n")
                if len(text) > MAX_LINE_CHARS:
                    text = text[:MAX_LINE_CHARS] + f" [... line cut at {MAX_LINE_CHARS} chars]"
                size += len(text)
                lines.append(f"{number:6d}\t{text}")
        shown_to = params.line_offset + len(lines) - 1
        notes = []
        if total == 0:
            notes.append("(empty file)")
        elif not lines:
            notes.append(f"(the file has {total} lines; line_offset {params.line_offset} is past the end)")
        elif shown_to < total:
            notes.append(f"(showing lines {params.line_offset}-{shown_to} of {total}; read on with line_offset)")
        if bad_utf8:
            notes.append("(not valid UTF-8: undecodable bytes are shown as U+FFFD)")
        return ToolResult("\n".join(lines + notes))
