"""The session's language servers: started when a file of their language is first read or edited, told of every
edit, and asked what the edit changed; they stop with the session.

The agent calls `after_call` once a call has run (kimi_cli.agent.calls): a read opens its file in the servers
of its language (in the background: the read is not held), an edit of named files sends the new text and
waits, bounded, for the diagnostics, a call that may have changed files it cannot name (a command, a
subagent) has every open document compared with the disk. What an edit introduced or fixed, in the edited
files and in other open files whose diagnostics changed with it, is appended to the result (the model reads
it) and put in its display (the terminal and ACP show it); a clean edit adds nothing.

"Introduced" is measured against what the model was last told, or what the server found when the file was
first read: a problem the model has seen is not repeated. A file edited before any server saw it has no
earlier state; its first check says so and lists what is there.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kimi_cli.extensions.lsp.client import LanguageServer
from kimi_cli.extensions.lsp.diagnostics import Diag, delta, edit_report, reported
from kimi_cli.extensions.lsp.protocol import uri_of
from kimi_cli.extensions.lsp.servers import Choice, ServerSpec, groups_for, language_of, locate, specs
from kimi_cli.sandbox.long_lived import SandboxSpawn

MAX_DOC_BYTES = 2 * 1024 * 1024  # a bigger file is not sent to a server
OTHER_DOCS = 8  # besides the edited files, the most recently used open documents checked after an edit
BASELINE_WAIT = 15.0  # how long a read's background check waits for the file's first diagnostics


@dataclass
class Edit:
    """What one call changed, for the servers: workspace-relative paths and, where the tool said, the text."""

    paths: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)


class LspManager:
    def __init__(self, workspace: Path, settings: Any, sandbox: SandboxSpawn | None, private_tmp: Path | None = None,
                 project_pins: dict[str, str] | None = None) -> None:  # fmt: skip
        self.workspace = workspace.resolve()
        self.settings = settings
        self.sandbox = sandbox
        self.private_tmp = private_tmp
        # A project's own servers: only in a trusted folder (its pins) and only where a sandbox runs them.
        sandboxed = sandbox is not None and getattr(sandbox, "name", "") != "none"
        self.project_pins = dict(project_pins or {}) if sandboxed else {}
        self.specs: dict[str, ServerSpec] = specs(settings)
        self.choices: dict[str, Choice] = {}  # by language, made on first touch
        self.servers: dict[str, LanguageServer] = {}  # by name: one process serves all its languages
        self.told: dict[tuple[str, str], list[Diag]] = {}  # (server, uri) -> the diagnostics the model knows
        self.notices: list[str] = []
        self.last: list[str] = []  # the last diagnostics lines reported (for /lsp)
        self._background: set[asyncio.Task[Any]] = set()
        self._recent: list[str] = []  # uris, most recently used last
        self._baselines: dict[str, asyncio.Task[None]] = {}  # a read file's first check, by relative path
        self.closed = False

    # --- which servers -----------------------------------------------------------------------------------

    def unavailable(self) -> str:
        """Why no server can run in this session ('' when they can)."""
        if not self.settings.enabled:
            return "language servers are off ([lsp] enabled = false)"
        if self.sandbox is None:
            return "language servers need the bwrap, landlock or none sandbox; this session's cannot run them"
        return ""

    def choose(self, language: str) -> Choice:
        """The servers of a language, located once per session."""
        known = self.choices.get(language)
        if known is not None:
            return known
        from kimi_cli.extensions.lsp.project import still_pinned

        choice = Choice()
        for group in groups_for(language, self.settings, self.specs):
            for name in group:
                spec = self.specs[name]
                found = locate(spec, self.workspace, bool(self.project_pins))
                swapped = (
                    found is not None
                    and found.source == "project"
                    and not still_pinned(self.workspace, found.project_file, self.project_pins)
                )
                if found is not None and swapped:
                    choice.missing.append(f"{name}: the project's {found.project_file} is not the file trusted "
                                          "at the start of this session; not run")  # fmt: skip
                    found = locate(spec, self.workspace, False)
                if found is None:
                    choice.missing.append(f"{name}: not installed (not on PATH outside the workspace)")
                    continue
                choice.servers.append(found)
                break
        self.choices[language] = choice
        return choice

    def servers_for(self, language: str) -> list[LanguageServer]:
        if self.unavailable() or self.closed:
            return []
        out = []
        for located in self.choose(language).servers:
            server = self.servers.get(located.spec.name)
            if server is None:
                assert self.sandbox is not None
                init = max(3 * self.settings.start_timeout, 5.0)  # the edit stops waiting sooner; the start goes on
                server = LanguageServer(located, self.workspace, self.sandbox, self.private_tmp, self._failed, init)
                self.servers[located.spec.name] = server
            if server.state not in ("failed", "stopped"):
                out.append(server)
        return out

    def _failed(self, server: LanguageServer) -> None:
        languages = ", ".join(server.spec.languages)
        self.notices.append(f"[lsp] {server.name} stopped working ({server.why}); {languages} diagnostics from it "
                            "are off for this session (/lsp shows its state)")  # fmt: skip

    # --- files -------------------------------------------------------------------------------------------

    def _rel(self, path: str) -> str | None:
        """A path a call named, as a workspace-relative path of a file of a known language (None otherwise)."""
        full = path if os.path.isabs(path) else os.path.join(self.workspace, path)
        real = os.path.realpath(full)
        root = str(self.workspace)
        if not real.startswith(root + os.sep) or language_of(real) is None:
            return None
        return real[len(root) + 1 :]

    def _read(self, rel: str) -> str | None:
        from kimi_cli.hostsafe import fs as safe_fs

        try:
            data = safe_fs.read_bytes(self.workspace, rel, MAX_DOC_BYTES + 1)
        except OSError:
            return None
        if len(data) > MAX_DOC_BYTES:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    async def _sync(self, rel: str, text: str, only_open: bool = False) -> list[tuple[LanguageServer, str]]:
        """Send a file's text to the servers of its language (started now when idle); [(server, uri)]."""
        found = language_of(rel)
        if found is None:
            return []
        language, language_id = found
        out = []
        for server in self.servers_for(language):
            server.ensure()
            if only_open and uri_of(self.workspace / rel) in server.docs:
                continue
            with contextlib.suppress(Exception):
                uri = await server.sync(self.workspace / rel, rel, language_id, text)
                out.append((server, uri))
                self._used(uri)
        return out

    def _used(self, uri: str) -> None:
        if uri in self._recent:
            self._recent.remove(uri)
        self._recent.append(uri)
        del self._recent[:-64]

    # --- the hook ----------------------------------------------------------------------------------------

    async def after_call(self, facts: Any, result: Any) -> None:
        """The agent's post-call hook (kimi_cli.agent.calls.CallObserver): never raises, never holds a read."""
        if self.unavailable() or self.closed:
            return
        try:
            lines: list[str] = []
            if facts.writes and facts.paths is not None and not result.is_error:
                lines = await self.edited(self._edit_of(facts.paths, result.display))
            elif facts.writes and facts.paths is None:
                lines = await self.edited(await asyncio.to_thread(self._changed_on_disk))
            for path in facts.read_paths:
                self.touch(path)
            lines = self._take_notices() + lines
        except Exception as exc:  # a server's failure never fails the call
            lines = [f"[lsp] diagnostics failed: {type(exc).__name__}: {exc}"[:300]]
        if lines:
            text = "\n".join(lines)
            result.output = f"{result.output.rstrip()}\n\n{text}" if result.output else text
            display = dict(result.display or {})
            display["diagnostics"] = lines
            result.display = display

    def _take_notices(self) -> list[str]:
        notices, self.notices = self.notices, []
        return notices

    def _edit_of(self, paths: tuple[str, ...], display: dict[str, Any] | None) -> Edit:
        edit = Edit()
        for path in paths:
            rel = self._rel(path)
            if rel is None:
                continue
            edit.paths.append(rel)
            wrote = display is not None and display.get("kind") == "diff" and isinstance(display.get("new"), str)
            if wrote and display is not None and self._rel(str(display.get("path", ""))) == rel:
                edit.texts[rel] = display["new"]  # the very text the tool wrote, not a second read
        return edit

    def _changed_on_disk(self) -> Edit:
        """Open documents whose file now differs (a command changed it), read once each."""
        edit = Edit()
        seen: set[str] = set()
        for server in list(self.servers.values()):
            for doc in list(server.docs.values()):
                if doc.path in seen:
                    continue
                seen.add(doc.path)
                text = self._read(doc.path)
                if text is not None and text != doc.text:
                    edit.paths.append(doc.path)
                    edit.texts[doc.path] = text
        return edit

    def touch(self, path: str) -> None:
        """A file was read: its servers start, and it opens in them, in the background."""
        rel = self._rel(path)
        if rel is None:
            return
        if rel in self._baselines:
            return
        task = asyncio.ensure_future(self._baseline(rel))
        self._baselines[rel] = task
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _baseline(self, rel: str) -> None:
        text = await asyncio.to_thread(self._read, rel)
        if text is None:
            return
        opened = await self._sync(rel, text, only_open=True)
        deadline = time.monotonic() + BASELINE_WAIT
        for server, uri in opened:
            version = server.docs[uri].version if uri in server.docs else 0
            found = await server.diagnostics([uri], deadline)
            doc = server.docs.get(uri)
            if uri in found and doc is not None and doc.version == version:  # no edit since: the file as read
                self.told.setdefault((server.name, uri), reported(found[uri]))

    async def edited(self, edit: Edit) -> list[str]:
        """Send the edited files' text and report what their diagnostics, and those of other open files,
        gained or lost; bounded by the timeout (the start timeout when a server must start first)."""
        if not edit.paths:
            return []
        from kimi_cli.extensions.lsp import protocol

        await protocol.load()  # once per process (~0.5 s): kimi's own cost, not the server's, so not in the bound
        began = time.monotonic()
        # A read's first check still running (the server is starting): it ends before the edit is sent, within
        # half the start bound, and this edit then waits as one that starts the server. A finished one is no
        # reason to wait longer than `timeout`.
        pending = [t for rel in edit.paths if (t := self._baselines.get(rel)) is not None and not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=self.settings.start_timeout / 2)
        synced: list[tuple[LanguageServer, str]] = []
        for rel in edit.paths:
            text = edit.texts.get(rel)
            if text is None:
                text = await asyncio.to_thread(self._read, rel)
            if text is not None:
                synced += await self._sync(rel, text)
        if not synced:
            return []
        by_server: dict[str, list[str]] = {}
        for server, uri in synced:
            by_server.setdefault(server.name, []).append(uri)
        waits = []
        for name, uris in by_server.items():
            server = self.servers[name]
            bound = self.settings.timeout if server.state == "running" and not pending else self.settings.start_timeout
            others = [u for u in reversed(self._recent) if u in server.docs and u not in uris][:OTHER_DOCS]
            waits.append(self._changes(server, uris, others, began, began + bound))
        results = await asyncio.gather(*waits)
        introduced = [d for added, _, _ in results for d in added]
        fixed = [d for _, removed, _ in results for d in removed]
        first = sorted({path for _, _, firsts in results for path in firsts})
        lines = edit_report(introduced, fixed, self.settings.max_lines, first)
        if lines:
            self.last = lines
        return lines

    async def _changes(self, server: LanguageServer, uris: list[str], others: list[str], began: float,
                       deadline: float) -> tuple[list[Diag], list[Diag], list[str]]:  # fmt: skip
        """(introduced, fixed, files checked for the first time) on one server for one edit."""
        if server.strategy == "push":  # others are what the server republishes after the edited files
            found = await server.diagnostics(uris, deadline)
            if others and found:
                for uri, diags in (await server.republished(others, began, deadline)).items():
                    found.setdefault(uri, diags)
        else:
            found = await server.diagnostics(uris + others, deadline)
        added: list[Diag] = []
        removed: list[Diag] = []
        first: list[str] = []
        for uri, diags in found.items():
            now = reported(diags)
            before = self.told.get((server.name, uri))
            if before is None and uri not in uris:
                self.told[(server.name, uri)] = now  # a file the model never saw checked: no baseline to compare
                continue
            if before is None:
                first.append(server.docs[uri].path if uri in server.docs else uri)
            plus, minus = delta(before or [], now)
            added += plus
            removed += minus
            self.told[(server.name, uri)] = now
        return added, removed, first

    # --- the session ends --------------------------------------------------------------------------------

    async def aclose(self) -> None:
        self.closed = True
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*(s.stop() for s in self.servers.values()), return_exceptions=True)
