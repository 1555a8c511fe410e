"""Glob: find workspace files by pattern, .gitignore respected."""

from __future__ import annotations

import asyncio
import fnmatch

from pydantic import BaseModel, Field

from kimi_cli.hostsafe.files import list_files
from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult
from kimi_cli.tools.errors import ToolError

MAX_MATCHES = 1000


class GlobParams(BaseModel):
    pattern: str = Field(description="Glob; `**` spans folders.")
    directory: str | None = Field(None, description="Folder to search in (default: the workspace).")


def glob_match(path: str, pattern: str) -> bool:
    if fnmatch.fnmatchcase(path, pattern):
        return True
    # `**/x` also matches `x` at the top level, as in gitignore and most shells.
    return pattern.startswith("**/") and glob_match(path, pattern[3:])


class Glob(Tool[GlobParams]):
    name = "Glob"
    description = (
        "Find files by path: the files matching a glob, sorted, at most 1000, ignored files left out. The pack's "
        "tree already lists every path; to search contents use Grep. "
        'Example: {"pattern": "**/test_*.py", "directory": "src"}'
    )
    Params = GlobParams
    facts = READS

    def facts_for(self, params: GlobParams) -> ToolFacts:
        return READS.reading(params.directory or "")

    async def run(self, params: GlobParams, ctx: ToolContext) -> ToolResult:
        base = ctx.workspace.resolve(params.directory or ".")
        if not base.is_dir():
            raise ToolError(f"{params.directory} is not a directory")
        prefix = ctx.workspace.relative(base)
        prefix = "" if prefix == "." else prefix + "/"
        files = await asyncio.to_thread(list_files, ctx.workspace.root)
        hits = [f for f in files if f.startswith(prefix) and glob_match(f[len(prefix) :], params.pattern)]
        display = {"kind": "glob", "pattern": params.pattern, "count": len(hits), "truncated": len(hits) > MAX_MATCHES}
        if not hits:
            return ToolResult(f"no files match {params.pattern!r}", display=display)
        shown = hits[:MAX_MATCHES]
        more = f"\n[{len(hits) - MAX_MATCHES} more not shown; narrow the pattern]" if len(hits) > MAX_MATCHES else ""
        return ToolResult("\n".join(shown) + more, display=display)
