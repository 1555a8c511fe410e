"""Diagnostics, Definition and References: read-only questions to the session's language servers.

The tools know the servers only through `CodeIntel`, which the session hands in (kimi_cli.extensions.lsp.
queries.Queries over the session's servers). A server starts on the first question about a file of its
language; nothing is ever written.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field

from kimi_cli.tools.base import READS, Tool, ToolContext, ToolFacts, ToolResult


class CodeIntel(Protocol):
    """The session's language servers, as the tools ask them; errors the model should read are ToolErrors."""

    async def diagnostics(self, path: str | None) -> str: ...

    async def locate(
        self, kind: str, path: str | None, line: int | None, column: int | None, symbol: str | None
    ) -> str: ...


class DiagnosticsParams(BaseModel):
    path: str | None = Field(None, description="A file or folder (default: the whole workspace).")


class Diagnostics(Tool[DiagnosticsParams]):
    name = "Diagnostics"
    description = (
        "The type errors and warnings the language servers (pyright, tsserver, gopls, rust-analyzer, ruff) find "
        "in a file, a folder or the workspace. Edits already report what they introduced or fixed; use this to "
        'see a file\'s whole state. Example: {"path": "src/app.py"}'
    )
    Params = DiagnosticsParams
    facts = READS

    def __init__(self, intel: CodeIntel) -> None:
        self.intel = intel

    def facts_for(self, params: DiagnosticsParams) -> ToolFacts:
        return READS.reading(params.path or "")

    async def run(self, params: DiagnosticsParams, ctx: ToolContext) -> ToolResult:
        text = await self.intel.diagnostics(params.path)
        return ToolResult(text, display={"kind": "diagnostics", "path": params.path or "."})


class LocateParams(BaseModel):
    path: str | None = Field(None, description="The file the symbol appears in.")
    line: int | None = Field(None, ge=1, description="1-based line of the symbol in that file.")
    column: int | None = Field(None, ge=1, description="1-based column of the symbol (or give `symbol`).")
    symbol: str | None = Field(
        None, description="The name: found on `line`, else first in `path`, else anywhere in the workspace."
    )


class Definition(Tool[LocateParams]):
    name = "Definition"
    description = (
        "Where a function, class, variable or type is defined, as file:line:column with the line, from the "
        "language server: exact across modules and imports, cheaper than Grep. "
        'Example: {"path": "app.py", "line": 12, "symbol": "parse_date"} or {"symbol": "parse_date"}'
    )
    Params = LocateParams
    facts = READS
    kind = "definition"

    def __init__(self, intel: CodeIntel) -> None:
        self.intel = intel

    def facts_for(self, params: LocateParams) -> ToolFacts:
        return READS.reading(params.path or "")

    async def run(self, params: LocateParams, ctx: ToolContext) -> ToolResult:
        text = await self.intel.locate(self.kind, params.path, params.line, params.column, params.symbol)
        return ToolResult(text, display={"kind": "locations", "of": self.kind})


class References(Definition):
    name = "References"
    description = (
        "Every place a symbol is used (its definition included), as file:line:column with the line, from the "
        "language server: only real uses, not same-named text as Grep finds. "
        'Example: {"path": "util.py", "symbol": "helper"}'
    )
    kind = "references"
