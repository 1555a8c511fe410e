"""What the Diagnostics, Definition and References tools ask of the session's servers (kimi_cli.tools.code_intel).

Positions come from the model as a file, a 1-based line and column in characters, or a symbol name (on that
line, in that file, or anywhere in the workspace through `workspace/symbol`). Answers name workspace files by
their relative path with the line's text; a place outside the workspace (the standard library's stubs) is named
by its path only: nothing outside the workspace is read.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kimi_cli.extensions.lsp.diagnostics import Diag, column_to_utf16, listing, utf16_to_column
from kimi_cli.extensions.lsp.protocol import uri_of
from kimi_cli.extensions.lsp.servers import LANGUAGES, SUFFIXES, language_of
from kimi_cli.tools.errors import ToolError

if TYPE_CHECKING:
    from kimi_cli.extensions.lsp.client import LanguageServer
    from kimi_cli.extensions.lsp.manager import LspManager

MAX_FILES = 100  # files a folder's Diagnostics opens
LIST_LINES = 100
MAX_LOCATIONS = 200
FOLDER_WAIT = 20.0


class Queries:
    """The CodeIntel service (kimi_cli.tools.code_intel) over one LspManager."""

    def __init__(self, manager: LspManager) -> None:
        self.manager = manager

    def _check(self) -> None:
        why = self.manager.unavailable()
        if why:
            raise ToolError(why)

    def _file(self, path: str) -> str:
        rel = self.manager._rel(path)
        if rel is None:
            full = Path(path) if Path(path).is_absolute() else self.manager.workspace / path
            if not full.resolve().is_relative_to(self.manager.workspace):
                raise ToolError(f"{path} is outside the workspace")
            known = ", ".join(sorted(SUFFIXES))
            raise ToolError(f"{path} is not a file of a language with a server ({known})")
        return rel

    def _servers(self, rel: str, navigating: bool = False) -> list[LanguageServer]:
        found = language_of(rel)
        language = found[0] if found else ""
        servers = [s for s in self.manager.servers_for(language) if s.spec.navigates or not navigating]
        if not servers:
            missing = "; ".join(self.manager.choose(language).missing) or "none is configured"
            raise ToolError(f"no language server runs for {language} files here ({missing})")
        return servers

    # --- Diagnostics -------------------------------------------------------------------------------------

    async def diagnostics(self, path: str | None) -> str:
        self._check()
        manager = self.manager
        target = Path(path) if path and Path(path).is_absolute() else manager.workspace / (path or "")
        target = target.resolve()
        if target.is_dir():
            return await self._folder(target)
        rel = self._file(path or "")
        servers = self._servers(rel)
        text = await asyncio.to_thread(manager._read, rel)
        if text is None:
            raise ToolError(f"{path} cannot be read as UTF-8 text of at most 2 MB")
        synced = await manager._sync(rel, text)
        deadline = time.monotonic() + max(manager.settings.start_timeout, manager.settings.timeout)
        found: list[Diag] = []
        answered = []
        for server, uri in synced:
            got = await server.diagnostics([uri], deadline)
            if uri in got:
                answered.append(server.name)
                found += got[uri]
                manager.told[(server.name, uri)] = [d for d in got[uri] if d.severity in ("error", "warning")]
        if not answered:
            states = ", ".join(f"{s.name}: {s.why or s.state}" for s in servers)
            return f"no diagnostics in time for {rel} ({states}); try again shortly"
        lines = listing(found, LIST_LINES)
        by = ", ".join(answered)
        if not lines:
            return f"{rel}: no errors or warnings ({by})"
        count = len([d for d in found if d.severity in ("error", "warning")])
        return "\n".join([f"{rel}: {count} problems ({by})", *lines])

    async def _folder(self, folder: Path) -> str:
        from kimi_cli.hostsafe.files import list_files

        manager = self.manager
        if not folder.is_relative_to(manager.workspace):
            raise ToolError(f"{folder} is outside the workspace")
        prefix = "" if folder == manager.workspace else str(folder.relative_to(manager.workspace)) + "/"
        names = await asyncio.to_thread(list_files, manager.workspace)
        files = [n for n in names if n.startswith(prefix) and language_of(n) is not None]
        checked = files[:MAX_FILES]
        deadline = time.monotonic() + FOLDER_WAIT
        pending: list[tuple[LanguageServer, str]] = []
        for rel in checked:
            text = await asyncio.to_thread(manager._read, rel)
            if text is not None:
                pending += await manager._sync(rel, text)
        by_server: dict[str, list[str]] = {}
        for server, uri in pending:
            by_server.setdefault(server.name, []).append(uri)
        results = await asyncio.gather(*(manager.servers[n].diagnostics(u, deadline) for n, u in by_server.items()))
        found = [d for got in results for diags in got.values() for d in diags]
        answered = sum(len(got) for got in results)
        where = prefix.rstrip("/") or "the workspace"
        if not checked:
            return f"no files of a language with a server in {where}"
        lines = listing(found, LIST_LINES)
        more = f" (the first {MAX_FILES} of {len(files)})" if len(files) > MAX_FILES else ""
        problems = len([d for d in found if d.severity in ("error", "warning")])
        summary = f"{problems} problems" if lines else "no errors or warnings"
        head = f"{where}: {answered} of {len(pending)} file checks answered{more}; {summary}"
        return "\n".join([head, *lines])

    # --- Definition and References -----------------------------------------------------------------------

    async def locate(self, kind: str, path: str | None, line: int | None, column: int | None,
                     symbol: str | None) -> str:  # fmt: skip
        self._check()
        method = "textDocument/definition" if kind == "definition" else "textDocument/references"
        if not path:
            if not symbol:
                raise ToolError("give a path with a line and column, a path and a symbol, or a symbol")
            return await self._by_name(kind, method, symbol)
        rel = self._file(path)
        text = await asyncio.to_thread(self.manager._read, rel)
        if text is None:
            raise ToolError(f"{path} cannot be read as UTF-8 text of at most 2 MB")
        lines = text.split("\n")
        where = _position(lines, line, column, symbol, rel)
        servers = self._servers(rel, navigating=True)
        synced = await self.manager._sync(rel, text)
        failure = "none ran"
        for server, uri in synced:
            if server not in servers:
                continue
            try:
                found = await server.locations(method, uri, where[0], column_to_utf16(lines[where[0]], where[1] + 1))
            except Exception as exc:  # RpcError, TimeoutError, an answer of the wrong shape: the next server
                failure = f"{server.name}: {exc or 'no answer in time'}"
                continue
            return self._show(kind, found, f"{rel}:{where[0] + 1}:{where[1] + 1}")
        raise ToolError(f"no answer from the language servers ({failure})")

    async def _by_name(self, kind: str, method: str, symbol: str) -> str:
        manager = self.manager
        running = [s for s in manager.servers.values() if s.state in ("starting", "running")]
        languages = {language for s in running for language in s.spec.languages}
        if not languages:  # nothing started yet: one file of each language the workspace has starts its servers
            languages = await self._start_present()
        hits: list[tuple[LanguageServer, str, Path, int, int]] = []
        for language in sorted(languages):
            for server in manager.servers_for(language):
                if not server.spec.navigates or any(h[0] is server for h in hits):
                    continue
                try:
                    found = await server.symbols(symbol)
                except Exception:
                    continue
                hits += [(server, n, f, ln, ch) for n, f, ln, ch in found if n == symbol or n.endswith("." + symbol)]
        if not hits:
            raise ToolError(f"no symbol named {symbol!r} found by the running language servers; name the file "
                            "it is used in (path and symbol) to start the right one")  # fmt: skip
        if kind == "definition":
            return self._show(kind, [(f, ln, ch) for _, _, f, ln, ch in hits], repr(symbol))
        server, _, file, line, character = hits[0]
        places = await server.locations(method, uri_of(file), line, character)
        return self._show(kind, places, repr(symbol))

    async def _start_present(self) -> set[str]:
        """Open one workspace file of each language present (bounded listing), so its servers start."""
        from kimi_cli.hostsafe.files import list_files

        manager = self.manager
        first: dict[str, str] = {}
        for name in (await asyncio.to_thread(list_files, manager.workspace))[:20_000]:
            found = language_of(name)
            if found is not None:
                first.setdefault(found[0], name)
        for rel in first.values():
            text = await asyncio.to_thread(manager._read, rel)
            if text is not None:
                await manager._sync(rel, text)
        return set(first) & set(LANGUAGES)

    def _show(self, kind: str, found: list[tuple[Path, int, int]], what: str) -> str:
        if not found:
            return f"no {kind} found for {what}"
        workspace = self.manager.workspace
        out: list[str] = []
        cache: dict[str, list[str] | None] = {}
        for file, line, character in dict.fromkeys(found):
            if len(out) >= MAX_LOCATIONS:
                out.append(f"... {len(found) - MAX_LOCATIONS} more")
                break
            if not file.is_relative_to(workspace):
                out.append(f"{file}:{line + 1} (outside the workspace)")
                continue
            rel = str(file.relative_to(workspace))
            if rel not in cache:
                text = self.manager._read(rel)
                cache[rel] = text.split("\n") if text is not None else None
            lines = cache[rel]
            source = lines[line] if lines is not None and 0 <= line < len(lines) else None
            column = utf16_to_column(source, character)
            shown = f": {source.strip()[:200]}" if source is not None else ""
            out.append(f"{rel}:{line + 1}:{column}{shown}")
        label = "definition" if kind == "definition" else "references"
        return f"{label} of {what} ({len(found)}):\n" + "\n".join(out)


def _position(lines: list[str], line: int | None, column: int | None, symbol: str | None, rel: str) -> tuple[int, int]:
    """(0-based line, 0-based character column) of the symbol the model names."""
    if line is not None and not 1 <= line <= len(lines):
        raise ToolError(f"{rel} has {len(lines)} lines; line {line} is not one of them")
    if symbol:
        word = re.compile(rf"(?<![\w$]){re.escape(symbol)}(?![\w$])")
        rows = [line - 1] if line is not None else range(len(lines))
        for row in rows:
            match = word.search(lines[row])
            if match:
                return row, match.start()
        where = f"line {line}" if line is not None else rel
        raise ToolError(f"{symbol!r} does not appear in {where} of {rel}")
    if line is None or column is None:
        raise ToolError("give a line and a column (1-based), or a symbol name")
    return line - 1, max(column - 1, 0)
