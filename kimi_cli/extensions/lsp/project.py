"""A project's own language servers in the trust question: each one present goes into the folder's trust digest.

`node_modules/.bin/typescript-language-server` or `.venv/bin/basedpyright-langserver` in the workspace is a
program the workspace controls. kimi runs one only in a trusted folder, and only while the file is what the
user trusted: its digest (the links on the way and the content, kimi_cli.hostsafe.pins.digest) is
taken when trust is assessed and compared before every start. A different file, or one added since, is not run
in this session (the user's own server runs, or none); the next start asks again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kimi_cli.hostsafe.project_settings import FolderReader, ProjectSettings

if TYPE_CHECKING:
    from kimi_cli.hostsafe.trust import FolderTrust

KEY = "lsp:project:"


def widenings(project: ProjectSettings) -> list[tuple[str, object, str]]:
    """For kimi_cli.hostsafe.trust: each project server present, with its digest (key, value, words)."""
    from kimi_cli.extensions.lsp.servers import project_servers
    from kimi_cli.hostsafe.pins import digest

    if project.users_own:
        return []
    found: list[tuple[str, object, str]] = []
    for rel in sorted(project_servers(project.folder)):
        words = f"run the project's own language server {rel} (in the sandbox, on files of this folder)"
        found.append((KEY + rel, digest(project.folder, rel), words))
    return found


def trusted_pins(folder: FolderTrust | None) -> dict[str, str]:
    """{entry: digest} of the project servers the user trusted in this session (none when not trusted)."""
    if folder is None or not folder.trusted:
        return {}
    return {w.key[len(KEY) :]: str(w.value) for w in folder.asks if w.key.startswith(KEY)}


def still_pinned(folder_path: object, rel: str, pins: dict[str, str]) -> bool:
    """The project server's file is still the one trusted (checked right before it starts)."""
    from pathlib import Path

    from kimi_cli.hostsafe.pins import digest

    return rel in pins and digest(Path(str(folder_path)), rel) == pins[rel]


def _read(project: ProjectSettings) -> None:
    """Nothing to read into the snapshot: `widenings` digests the project's servers when trust is assessed."""


READER = FolderReader("kimi_cli.extensions.lsp", _read, widenings)
