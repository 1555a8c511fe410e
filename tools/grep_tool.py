"""Grep: regex search over workspace files, .gitignore respected."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from pydantic import BaseModel, Field

from kimi_cli.tools.base import Tool, ToolContext, ToolError, ToolResult
from kimi_cli.tools.files import list_files, looks_binary
from kimi_cli.tools.glob_tool import glob_match
from kimi_cli.tools.output import cap_text

MAX_FILE_BYTES = 5_000_000


class GrepParams(BaseModel):
    pattern: str = Field(description="Python regular expression.")
    path: str | None = Field(None, description="File or folder to search, relative to the workspace.")
    glob: str | None = Field(None, description="Only files whose path matches this glob, e.g. `**/*.py`.")
    ignore_case: bool = Field(False, description="Case-insensitive match.")
    context: int = Field(0, ge=0, le=20, description="Lines of context around each match.")
    max_results: int = Field(200, ge=1, le=5000, description="Stop after this many matching lines.")


class Grep(Tool[GrepParams]):
    name = "Grep"
    description = "Search file contents with a regex. Output lines are `path:line:text` (context uses `-`)."
    Params = GrepParams
    read_only = True

    async def run(self, params: GrepParams, ctx: ToolContext) -> ToolResult:
        try:
            regex = re.compile(params.pattern, re.IGNORECASE if params.ignore_case else 0)
        except re.error as exc:
            raise ToolError(f"invalid regex {params.pattern!r}: {exc}") from None
        base = ctx.workspace.resolve(params.path or ".")
        return await asyncio.to_thread(self._search, regex, base, params, ctx)

    def _search(self, regex: re.Pattern[str], base: Path, params: GrepParams, ctx: ToolContext) -> ToolResult:
        root = ctx.workspace.root
        if base.is_file():
            candidates = [ctx.workspace.relative(base)]
        else:
            prefix = ctx.workspace.relative(base)
            prefix = "" if prefix == "." else prefix + "/"
            candidates = [f for f in list_files(root) if f.startswith(prefix)]
        if params.glob:
            candidates = [f for f in candidates if glob_match(f, params.glob)]
        out: list[str] = []
        hits = 0
        for rel in candidates:
            lines = _text_lines(root / rel)
            if lines is None:
                continue
            shown: set[int] = set()
            for idx, line in enumerate(lines):
                if not regex.search(line):
                    continue
                hits += 1
                lo, hi = max(0, idx - params.context), min(len(lines), idx + params.context + 1)
                for j in range(lo, hi):
                    if j not in shown:
                        sep = ":" if j == idx else "-"
                        out.append(f"{rel}{sep}{j + 1}{sep}{lines[j][:500]}")
                        shown.add(j)
                if hits >= params.max_results:
                    out.append(f"[stopped at max_results={params.max_results}]")
                    return ToolResult(cap_text("\n".join(out), 50_000))
        return ToolResult(cap_text("\n".join(out), 50_000) if out else f"no matches for {params.pattern!r}")


def _text_lines(path: Path) -> list[str] | None:
    try:
        if path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if looks_binary(data):
        return None
    return data.decode("utf-8", errors="replace").splitlines()
