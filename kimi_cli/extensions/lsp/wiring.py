"""What the session takes from here: the manager (its post-call hook), the three tools, /lsp's lines, and the
lines `kimi doctor` will print. Imported only when the first agent is built."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimi_cli.extensions.lsp.manager import LspManager
from kimi_cli.extensions.lsp.servers import LANGUAGES, groups_for, locate, specs

if TYPE_CHECKING:
    from kimi_cli.hostsafe.trust import FolderTrust
    from kimi_cli.tools.base import Tool


def open_lsp(settings: Any, workdir: Path, sandbox: Any, private_tmp: Path | None,
             folder: FolderTrust | None) -> LspManager | None:  # fmt: skip
    """The session's language servers, or None when they are off. Nothing starts until a file is touched."""
    if not settings.enabled:
        return None
    from kimi_cli.extensions.lsp.project import trusted_pins

    spawner = sandbox if hasattr(sandbox, "spawn_spec") else None  # Docker runs no long-lived process of ours
    return LspManager(workdir, settings, spawner, private_tmp, trusted_pins(folder))


def lsp_tools(manager: LspManager) -> list[Tool[Any]]:
    """Diagnostics, Definition and References, when any server can run here (none installed: no tools)."""
    from kimi_cli.extensions.lsp.queries import Queries
    from kimi_cli.tools.code_intel import Definition, Diagnostics, References

    if manager.unavailable() or not any(manager.choose(language).servers for language in LANGUAGES):
        return []
    queries = Queries(manager)
    return [Diagnostics(queries), Definition(queries), References(queries)]


def status_lines(manager: LspManager | None) -> list[str]:
    """/lsp: each language's servers and their state, what is not installed (one line each), the last
    diagnostics an edit reported."""
    if manager is None:
        return ["language servers are off ([lsp] enabled = false)"]
    why = manager.unavailable()
    if why:
        return [why]
    lines = []
    for language in LANGUAGES:
        choice = manager.choose(language)
        parts = []
        for located in choice.servers:
            server = manager.servers.get(located.spec.name)
            state = server.state if server is not None else "not started (no file of the language touched yet)"
            if server is not None and server.state == "running":
                state += f", {len(server.docs)} open files"
            if server is not None and server.why:
                state += f"; {server.why}"
            where = "the project's" if located.source == "project" else "yours"
            parts.append(f"{located.spec.name} ({where}: {located.argv[0]}): {state}")
        parts += choice.missing
        lines.append(f"{language}: " + (" · ".join(parts) or "no server configured"))
    if manager.last:
        lines += ["last diagnostics:", *manager.last]
    return lines


def doctor_lines(settings: Any, workdir: Path) -> list[str]:
    """For `kimi doctor`: per language, the server a session here would use and from where, or that none is
    installed. Looks things up only (no server starts); the project's own servers count only once trusted."""
    if not settings.enabled:
        return ["lsp: off ([lsp] enabled = false)"]
    known = specs(settings)
    lines = []
    for language in LANGUAGES:
        found = []
        for group in groups_for(language, settings, known):
            located = next((hit for name in group if (hit := locate(known[name], workdir, False))), None)
            missing = f"{' or '.join(group)}: not installed"
            found.append(f"{located.spec.name} ({located.argv[0]})" if located else missing)
        lines.append(f"lsp {language}: " + ("; ".join(found) or "no server configured"))
    return lines
