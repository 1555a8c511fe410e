"""The LSP messages kimi sends and reads, as lsprotocol's types.

Requests are built from lsprotocol's attrs classes and unstructured by its converter; what a server answers
is structured through the converter into the typed response (a server that sends something else has its
answer dropped, never half-read). lsprotocol with cattrs takes ~0.5 s to import on a loaded machine, so it
loads once, on a worker thread, while the first server starts.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

_loaded: tuple[Any, Any] | None = None
_lock = threading.Lock()
# Server requests that need no more than an empty answer.
ACKNOWLEDGED = frozenset({
    "client/registerCapability", "client/unregisterCapability", "window/workDoneProgress/create",
    "window/showMessageRequest", "window/showDocument", "workspace/semanticTokens/refresh",
    "workspace/diagnostic/refresh", "workspace/inlayHint/refresh", "workspace/codeLens/refresh",
    "workspace/inlineValue/refresh", "workspace/foldingRange/refresh",
})  # fmt: skip


def _load() -> tuple[Any, Any]:
    global _loaded
    with _lock:
        if _loaded is None:
            from lsprotocol import converters, types

            _loaded = (types, converters.get_converter())
        return _loaded


async def load() -> tuple[Any, Any]:
    """(lsprotocol.types, its converter), imported on a worker thread the first time."""
    return _loaded if _loaded is not None else await asyncio.to_thread(_load)


def _typed(result: Any, response: str) -> Any:
    """A server's result read as lsprotocol's typed response (ValueError when it is not one)."""
    types, converter = _load()
    try:
        return converter.structure({"jsonrpc": "2.0", "id": 0, "result": result}, getattr(types, response)).result
    except Exception as exc:  # cattrs' validation errors: the answer does not have the protocol's shape
        raise ValueError(f"the server's answer is not a {response}") from exc


def initialize_params(workspace: Path, spec: Any) -> Any:
    """`initialize`'s params. No processId: in bwrap's pid namespace kimi's pid means nothing, and pyright
    exits when the process it names seems gone; the launcher ends the server with kimi instead."""
    types, converter = _load()
    caps = types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
            diagnostic=types.DiagnosticClientCapabilities(related_document_support=False),
            definition=types.DefinitionClientCapabilities(link_support=True),
            references=types.ReferenceClientCapabilities(),
        ),
        workspace=types.WorkspaceClientCapabilities(
            configuration=True, workspace_folders=True, symbol=types.WorkspaceSymbolClientCapabilities()
        ),
        window=types.WindowClientCapabilities(work_done_progress=False),
    )
    uri = uri_of(workspace)
    params = types.InitializeParams(
        capabilities=caps, process_id=None, root_uri=uri, root_path=str(workspace),
        workspace_folders=[types.WorkspaceFolder(uri=uri, name=workspace.name)],
        initialization_options=spec.init_options or None, client_info=types.ClientInfo(name="kimi"),
    )  # fmt: skip
    return converter.unstructure(params)


def open_params(uri: str, language_id: str, version: int, text: str) -> Any:
    types, converter = _load()
    item = types.TextDocumentItem(uri=uri, language_id=language_id, version=version, text=text)
    return converter.unstructure(types.DidOpenTextDocumentParams(text_document=item))


def change_params(uri: str, version: int, text: str) -> Any:
    types, converter = _load()
    return converter.unstructure(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
    ))  # fmt: skip


def publish_params(params: dict[str, Any]) -> tuple[str, int | None, list[Any]] | None:
    """(uri, version, diagnostics) of a publishDiagnostics notification, or None when it is malformed."""
    types, converter = _load()
    try:
        parsed = converter.structure(params, types.PublishDiagnosticsParams)
    except Exception:  # not the protocol's shape: dropped
        return None
    return parsed.uri, parsed.version, list(parsed.diagnostics)


def pulled_items(result: Any) -> list[Any] | None:
    """The diagnostics of a `textDocument/diagnostic` answer (None: "unchanged", or not an answer)."""
    try:
        report = _typed(result, "DocumentDiagnosticResponse")
    except ValueError:
        return None
    items = getattr(report, "items", None)
    return list(items) if items is not None else None


def uri_of(path: Path) -> str:
    return "file://" + quote(str(path))


def path_of(uri: str) -> Path | None:
    parts = urlsplit(uri)
    return Path(unquote(parts.path)) if parts.scheme == "file" else None


def locations(result: Any, method: str) -> list[tuple[Path, int, int]]:
    """(file, 0-based line, UTF-16 character) of a definition or references answer."""
    typed = _typed(result, "ReferencesResponse" if method == "textDocument/references" else "DefinitionResponse")
    items = [] if typed is None else list(typed) if isinstance(typed, list | tuple) else [typed]
    out: list[tuple[Path, int, int]] = []
    for item in items:
        uri = getattr(item, "uri", None) or getattr(item, "target_uri", None)
        where = getattr(item, "range", None) or getattr(item, "target_selection_range", None)
        path = path_of(uri) if isinstance(uri, str) else None
        if path is not None and where is not None:
            out.append((path, int(where.start.line), int(where.start.character)))
    return out


def symbols(result: Any) -> list[tuple[str, Path, int, int]]:
    typed = _typed(result, "WorkspaceSymbolResponse")
    out: list[tuple[str, Path, int, int]] = []
    for item in typed or []:
        location = getattr(item, "location", None)
        uri = getattr(location, "uri", None)
        where = getattr(location, "range", None)
        path = path_of(uri) if isinstance(uri, str) else None
        if path is not None and where is not None:  # a WorkspaceSymbol with only a uri has no position
            out.append((str(item.name), path, int(where.start.line), int(where.start.character)))
    return out


def setting(settings: dict[str, Any], section: Any) -> Any:
    """A workspace/configuration answer: the section as a key, or walked by its dots; None when unknown."""
    if not isinstance(section, str) or not section:
        return settings or None
    if section in settings:
        return settings[section]
    node: Any = settings
    for part in section.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node
