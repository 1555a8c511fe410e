"""One language server of the session: its start, the documents it has open, its diagnostics, its answers.

Diagnostics are taken by the quickest exact route the server offers, chosen once it has started:
- "pull": the server answers `textDocument/diagnostic` (ruff): asked for each changed document;
- "tsserver": typescript-language-server publishes only when something changed, and only after a 300-800 ms
  delay, so a clean edit would wait out the whole bound; tsserver's own syntactic and semantic diagnostics
  requests (through its `typescript.tsserverRequest` command) answer for the current text at once;
- "push": `textDocument/publishDiagnostics` carrying the document's version (pyright, gopls, rust-analyzer):
  the first publish at or past the version sent. One without a version counts when it arrives after the
  change and nothing newer follows within SETTLE.
A server that exits is started again once (its documents reopened); the second time it is marked failed,
with one notice.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.extensions.lsp import protocol
from kimi_cli.extensions.lsp.diagnostics import Diag, from_lsp, from_tsserver
from kimi_cli.extensions.lsp.process import spawn
from kimi_cli.extensions.lsp.protocol import path_of, uri_of
from kimi_cli.extensions.lsp.rpc import Connection, RpcError
from kimi_cli.extensions.lsp.servers import Located
from kimi_cli.sandbox.long_lived import SandboxSpawn, ServerProcess

REQUEST_TIMEOUT = 15.0
SETTLE = 0.08
# After an edit's own report, how long a push server may stay silent before the other open documents it rechecks
# (their diagnostics republished) are taken as done: it checks them after the edited file, and under load the
# gap reached hundreds of milliseconds.
OTHERS_QUIET = 0.5
MAX_PUBLISHED = 2000  # files whose latest diagnostics are kept


@dataclass
class Doc:
    path: str  # workspace-relative
    language_id: str
    version: int
    text: str
    sent: float  # when this version went out


@dataclass
class Published:
    version: int | None
    at: float
    diags: list[Diag] = field(default_factory=list)


class LanguageServer:
    """Started on first use (`ensure`); every method is bounded in time and raises nothing but RpcError/TimeoutError."""

    def __init__(self, located: Located, workspace: Path, sandbox: SandboxSpawn, private_tmp: Path | None,
                 on_failed: Callable[[LanguageServer], None], init_timeout: float = 30.0) -> None:  # fmt: skip
        self.located = located
        self.spec = located.spec
        self.workspace = workspace
        self.sandbox = sandbox
        self.private_tmp = private_tmp
        self.on_failed = on_failed
        self.init_timeout = init_timeout  # initialize must answer within this (a cold tsserver, loaded: ~10 s)
        self.state = "idle"  # idle | starting | running | failed | stopped
        self.why = ""  # why it failed, for /lsp
        self.exits = 0
        self.strategy = "push"
        self.process: ServerProcess | None = None
        self.conn: Connection | None = None
        self._starting: asyncio.Task[bool] | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self.docs: dict[str, Doc] = {}  # by uri
        self.published: dict[str, Published] = {}  # by uri
        self._news = asyncio.Event()
        self._generation = 0  # each start; the watchers of an older one tell nothing
        self._handled = 0
        self._io = asyncio.Lock()  # documents go out in order: a restart's reopening before any later change
        self.started_in = 0.0  # seconds from spawn to initialized

    @property
    def name(self) -> str:
        return self.spec.name

    # --- life ----------------------------------------------------------------------------------------------

    def ensure(self) -> asyncio.Task[bool] | None:
        """Start the server unless it runs or failed; the task that ends when it is ready (True) or not."""
        if self.state in ("failed", "stopped"):
            return None
        if self._starting is None or (self._starting.done() and self.state == "idle"):
            self.state = "starting"
            self._starting = asyncio.ensure_future(self._start())
        return self._starting

    async def ready(self, timeout: float) -> bool:
        task = self.ensure()
        if task is None:
            return False
        try:
            return await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            return False

    async def _start(self) -> bool:
        began = time.monotonic()
        self._generation += 1
        generation = self._generation
        try:
            types, _ = await protocol.load()
            self.process = await spawn(self.located, self.sandbox, self.workspace, self.private_tmp)
            proc = self.process.proc
            assert proc.stdout is not None and proc.stdin is not None
            self.conn = Connection(proc.stdout, proc.stdin, self._notified, self._asked)
            self._tasks = [asyncio.ensure_future(self._serve(self.conn, generation)),
                           asyncio.ensure_future(self._watch(self.process, generation))]  # fmt: skip
            result = await self.conn.request("initialize", protocol.initialize_params(self.workspace, self.spec),
                                             self.init_timeout)  # fmt: skip
            caps = result.get("capabilities", {}) if isinstance(result, dict) else {}
            if self.spec.tsserver:
                self.strategy = "tsserver"
            elif isinstance(caps, dict) and caps.get("diagnosticProvider"):
                self.strategy = "pull"
            async with self._io:
                await self.conn.notify("initialized", {})
                # No workspace/didChangeConfiguration: the servers with settings (pyright) ask for them
                # (workspace/configuration), and a push on top makes pyright set its whole service up again.
                for doc in list(self.docs.values()):  # opened while it started, or before a restart
                    await self._send_open(types, doc)
                self.state = "running"
        except (OSError, RpcError, TimeoutError, ValueError) as exc:
            why = "did not answer in time" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
            await self._lost(f"could not start: {why}", generation)
            return False
        self.started_in = time.monotonic() - began
        return True

    async def _serve(self, conn: Connection, generation: int) -> None:
        """The read loop; a connection the server broke (a flood, a message over the bounds) stops it."""
        await conn.serve()
        if not conn.closed.startswith("the server closed"):  # an exit: _watch tells it with the exit code
            await self._lost(conn.closed, generation)

    async def _watch(self, process: ServerProcess, generation: int) -> None:
        await process.proc.wait()
        await self._lost(f"exited with code {process.proc.returncode}", generation)

    async def _lost(self, why: str, generation: int) -> None:
        """This start of the server is gone or unusable (told once, whoever sees it first): stopped now,
        started again once on next use, then failed."""
        if generation != self._generation or self._handled == generation:
            return
        self._handled = generation  # before any await: the other watchers see it is handled
        process, self.process = self.process, None
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close(why)
        tail = process.stderr.last_line() if process is not None else ""
        if process is not None:
            with contextlib.suppress(Exception):
                await process.stop(0.5)
        if self.state == "stopped":
            return
        self.exits += 1
        self.why = why + (f" ({tail})" if tail else "")
        self.published.clear()
        self._news.set()
        if self.exits >= 2:
            self.state = "failed"
            self.on_failed(self)
        else:
            self.state = "idle"

    async def stop(self) -> None:
        """shutdown and exit when it answers at once, then its process group ends."""
        was, self.state = self.state, "stopped"
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
        if self.conn is not None and was == "running":
            with contextlib.suppress(RpcError, TimeoutError, asyncio.CancelledError):
                await self.conn.request("shutdown", None, 1.0)
                await self.conn.notify("exit", None)
        if self.conn is not None:
            self.conn.close("stopped")
        if self.process is not None:
            with contextlib.suppress(Exception):
                await self.process.stop(1.0)
        for task in self._tasks:
            task.cancel()

    # --- what the server sends -------------------------------------------------------------------------

    def _notified(self, method: str, params: Any) -> None:
        if method != "textDocument/publishDiagnostics" or not isinstance(params, dict):
            return
        parsed = protocol.publish_params(params)
        if parsed is None:
            return
        uri, version, items = parsed
        rel = self._rel(uri)
        if rel is None:  # outside the workspace (a config that includes other folders): never reported
            return
        if uri not in self.published and len(self.published) >= MAX_PUBLISHED:
            return
        doc = self.docs.get(uri)
        self.published[uri] = Published(version, time.monotonic(), from_lsp(items, rel, _lines(doc)))
        self._news.set()

    def _asked(self, method: str, params: Any) -> Any:
        if method == "workspace/configuration":
            items = params.get("items", []) if isinstance(params, dict) else []
            return [protocol.setting(self.spec.settings, i.get("section") if isinstance(i, dict) else None)
                    for i in items[:64]]  # fmt: skip
        if method == "workspace/workspaceFolders":
            return [{"uri": uri_of(self.workspace), "name": self.workspace.name}]
        if method == "workspace/applyEdit":  # a server never edits the user's files
            return {"applied": False, "failureReason": "kimi does not let language servers edit files"}
        if method in protocol.ACKNOWLEDGED:
            return None
        raise LookupError(method)

    def _rel(self, uri: str) -> str | None:
        path = path_of(uri)
        if path is None:
            return None
        try:
            return str(path.relative_to(self.workspace))
        except ValueError:
            return None

    # --- documents -----------------------------------------------------------------------------------------

    async def sync(self, abs_path: Path, rel: str, language_id: str, text: str) -> str:
        """Open the document, or send its new text (didChange, then didSave); its uri."""
        types, _ = await protocol.load()
        uri = uri_of(abs_path)
        async with self._io:
            doc = self.docs.get(uri)
            if doc is not None and doc.text == text:
                return uri
            if doc is None:
                doc = Doc(rel, language_id, 1, text, time.monotonic())
                self.docs[uri] = doc
                if self.state == "running":
                    await self._send_open(types, doc)
                return uri
            doc.version += 1
            doc.text, doc.sent = text, time.monotonic()
            if self.state == "running" and self.conn is not None:
                await self.conn.notify("textDocument/didChange", protocol.change_params(uri, doc.version, text))
                await self.conn.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        return uri

    async def _send_open(self, types: Any, doc: Doc) -> None:
        assert self.conn is not None
        uri = uri_of(self.workspace / doc.path)
        doc.sent = time.monotonic()
        params = protocol.open_params(uri, doc.language_id, doc.version, doc.text)
        await self.conn.notify("textDocument/didOpen", params)

    async def forget(self, uri: str) -> None:
        self.docs.pop(uri, None)
        self.published.pop(uri, None)
        if self.state == "running" and self.conn is not None:
            with contextlib.suppress(RpcError):
                await self.conn.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    # --- diagnostics ---------------------------------------------------------------------------------------

    async def diagnostics(self, uris: list[str], deadline: float) -> dict[str, list[Diag]]:
        """The diagnostics of these open documents for their current text, those ready by `deadline`
        (time.monotonic()); a document not answered in time is left out."""
        if not await self.ready(max(deadline - time.monotonic(), 0.0)) or self.conn is None:
            return {}
        wanted = [u for u in uris if u in self.docs]
        if self.strategy == "push":
            return await self._pushed(wanted, deadline)
        answers = await asyncio.gather(*(self._pulled(u, deadline) for u in wanted), return_exceptions=True)
        return {u: a for u, a in zip(wanted, answers, strict=True) if isinstance(a, list)}

    async def _pushed(self, uris: list[str], deadline: float) -> dict[str, list[Diag]]:
        out: dict[str, list[Diag]] = {}
        while True:
            for uri in uris:
                doc, seen = self.docs.get(uri), self.published.get(uri)
                if doc is None or seen is None or uri in out:
                    continue
                current = seen.version is not None and seen.version >= doc.version
                settled = seen.version is None and seen.at > doc.sent and time.monotonic() - seen.at >= SETTLE
                if current or settled:
                    out[uri] = seen.diags
            left = deadline - time.monotonic()
            if len(out) == len(uris) or left <= 0 or self.state != "running":
                return out
            self._news.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._news.wait(), min(left, SETTLE))

    async def republished(self, uris: list[str], since: float, deadline: float) -> dict[str, list[Diag]]:
        """A push server's diagnostics for these other open documents published at or after `since`: waited
        for while publications go on, until all have come, OTHERS_QUIET passes with none, or `deadline`."""
        out: dict[str, list[Diag]] = {}
        quiet = False
        while True:
            for uri in uris:
                seen = self.published.get(uri)
                if seen is not None and seen.at >= since:
                    out[uri] = seen.diags
            left = deadline - time.monotonic()
            if quiet or len(out) == len(uris) or left <= 0 or self.state != "running":
                return out
            self._news.clear()
            try:
                await asyncio.wait_for(self._news.wait(), min(left, OTHERS_QUIET))
            except TimeoutError:
                quiet = True

    async def _pulled(self, uri: str, deadline: float) -> list[Diag]:
        assert self.conn is not None
        doc = self.docs[uri]
        left = max(deadline - time.monotonic(), 0.05)
        if self.strategy == "tsserver":
            file = str(self.workspace / doc.path)
            out: list[Diag] = []
            for command in ("syntacticDiagnosticsSync", "semanticDiagnosticsSync"):
                args = {"command": "typescript.tsserverRequest", "arguments": [command, {"file": file}]}
                answer = await self.conn.request("workspace/executeCommand", args, left)
                out += from_tsserver(answer.get("body") if isinstance(answer, dict) else None, doc.path)
                left = max(deadline - time.monotonic(), 0.05)
            return out
        answer = await self.conn.request("textDocument/diagnostic", {"textDocument": {"uri": uri}}, left)
        items = protocol.pulled_items(answer)
        return from_lsp(items, doc.path, _lines(doc)) if items is not None else []

    # --- navigation ----------------------------------------------------------------------------------------

    async def locations(self, method: str, uri: str, line: int, character: int) -> list[tuple[Path, int, int]]:
        """definition or references at a position (0-based): (file, 0-based line, UTF-16 character)."""
        if not await self.ready(REQUEST_TIMEOUT) or self.conn is None:
            raise RpcError(f"{self.name} is not running ({self.why or self.state})")
        params: dict[str, Any] = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
        if method == "textDocument/references":
            params["context"] = {"includeDeclaration": True}
        answer = await self.conn.request(method, params, REQUEST_TIMEOUT)
        return protocol.locations(answer, method)

    async def symbols(self, query: str) -> list[tuple[str, Path, int, int]]:
        """workspace/symbol: (name, file, 0-based line, character) of the symbols the server matches."""
        if not await self.ready(REQUEST_TIMEOUT) or self.conn is None:
            raise RpcError(f"{self.name} is not running ({self.why or self.state})")
        answer = await self.conn.request("workspace/symbol", {"query": query}, REQUEST_TIMEOUT)
        return protocol.symbols(answer)

    def status(self) -> dict[str, Any]:
        tail = self.process.stderr if self.process is not None else None
        return {
            "name": self.name, "languages": list(self.spec.languages), "source": self.located.source,
            "program": self.located.argv[0], "state": self.state, "why": self.why, "restarts": self.exits,
            "documents": len(self.docs), "started_in": round(self.started_in, 2),
            "stderr_bytes": tail.total if tail is not None else 0,
        }  # fmt: skip


def _lines(doc: Doc | None) -> list[str] | None:
    return doc.text.split("\n") if doc is not None else None
