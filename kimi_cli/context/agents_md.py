"""AGENTS.md: project instructions, merged from the repository root down to the working directory.

A folder's instructions are its AGENTS.md, or, for repositories written for other agents, its CLAUDE.md or
GEMINI.md when it has no AGENTS.md. Those from the root down to the working directory go into the session
prefix; those in folders below it are offered once each, as a note, when the agent first reads or edits
there (NestedInstructions), so the prefix never changes mid-session.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from kimi_cli.kernel.contain import below, inside

MAX_CHARS = 40_000
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")  # a folder's instructions: the first it has
MAX_DEPTH = 64  # folders looked at below the working directory, per path
NESTED_NOTE = (
    "[kimi] Instructions for a folder you are now working in (they cover the files under that folder and, "
    "for those files, win over the ones above; the user's words still win):"
)


def repo_root(workdir: Path) -> Path:
    """The work tree's top folder, found without running git (kimi_cli.hostsafe.git.host)."""
    from kimi_cli.hostsafe.git.location import UnsafeRepository
    from kimi_cli.hostsafe.git.repo_guard import open_repo

    try:
        location = open_repo(workdir)
    except (UnsafeRepository, OSError):
        return workdir
    return location.work_tree if location is not None else workdir


def read_instructions(anchor: Path, candidate: Path) -> str | None:
    """An instructions file under `anchor`, or None. A link is followed only while it stays under the anchor,
    and the resolved file is opened through kimi_cli.hostsafe.fs (no link followed at that moment)."""
    from kimi_cli.hostsafe.fs import read_bytes

    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    rel = below(anchor, real)
    if rel is None:
        return None  # a link out of the workspace: never read
    try:
        data = read_bytes(anchor, rel, MAX_CHARS * 4)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def folder_instructions(anchor: Path, folder: Path) -> tuple[Path, str] | None:
    """(file, text) of a folder's instructions: AGENTS.md, else CLAUDE.md, else GEMINI.md; None if it has none."""
    for name in INSTRUCTION_FILES:
        text = read_instructions(anchor, folder / name)
        if text is not None:
            return folder / name, text.strip()
    return None


def _element(source: Path | str, text: str) -> str:
    return f'<instructions source="{source}">\n{text[:MAX_CHARS]}\n</instructions>'


def load_agents_md(workdir: Path) -> str:
    """Every folder's instructions from the repository root to `workdir`, outermost first, each under its path."""
    workdir = workdir.resolve()
    root = repo_root(workdir)
    chain = [workdir, *workdir.parents]
    folders = list(reversed(chain[: chain.index(root) + 1])) if root in chain else [workdir]
    parts = []
    for folder in folders:
        # The workspace's own files are the sandbox's to change: a link there is followed only while it stays
        # inside the workspace. Folders above it (up to the repository root) answer to the repository root.
        found = folder_instructions(workdir if inside(folder, workdir) else root, folder)
        if found is not None:
            candidate, text = found
            parts.append(_element(below(root, candidate) or candidate, text))
    return "\n".join(parts)


class NestedInstructions:
    """Instructions in folders below the working directory, offered once each: the first time a call reads or
    edits a path under one, `note` returns it (one conversation note; the prefix is never rebuilt for it)."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir.resolve()
        self.looked: set[Path] = set()  # folders already looked at, with or without instructions

    def note(self, paths: Iterable[str]) -> str:
        """The note for the instructions first met under `paths` (workspace-relative or absolute), or ''."""
        found: list[str] = []
        for raw in paths:
            for folder in self._folders(raw):
                if folder in self.looked:
                    continue
                self.looked.add(folder)
                hit = folder_instructions(self.workdir, folder)
                if hit is not None and hit[1]:
                    found.append(_element(hit[0].relative_to(self.workdir).as_posix(), hit[1]))
        return "\n".join([NESTED_NOTE, *found]) if found else ""

    def _folders(self, raw: str) -> list[Path]:
        """The folders strictly below the working directory, outermost first, that hold the path `raw`."""
        if not raw or "\x00" in raw:
            return []
        target = Path(os.path.normpath(self.workdir / raw))  # lexical: links are for read_instructions to judge
        rel = below(self.workdir, target)
        if rel is None:
            return []
        parts = Path(rel).parts
        try:
            is_dir = target.is_dir()
        except OSError:  # a name too long, say: the call itself will fail
            return []
        if parts and not is_dir:
            parts = parts[:-1]
        parts = parts[:MAX_DEPTH]
        return [self.workdir.joinpath(*parts[: i + 1]) for i in range(len(parts))]
