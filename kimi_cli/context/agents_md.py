"""AGENTS.md: project instructions, merged from the repository root down to the working directory."""

from __future__ import annotations

from pathlib import Path

MAX_CHARS = 40_000


def repo_root(workdir: Path) -> Path:
    """The work tree's top folder, found without running git (kimi_cli.tools.host_git)."""
    from kimi_cli.tools.host_git import UnsafeRepository, open_repo

    try:
        location = open_repo(workdir)
    except (UnsafeRepository, OSError):
        return workdir
    return location.work_tree if location is not None else workdir


def read_instructions(anchor: Path, candidate: Path) -> str | None:
    """An instructions file under `anchor`, or None. A link is followed only while it stays under the anchor,
    and the resolved file is opened through kimi_cli.tools.safe_fs (no link followed at that moment)."""
    from kimi_cli.tools.safe_fs import read_bytes

    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not real.is_relative_to(anchor):
        return None  # a link out of the workspace: never read
    try:
        data = read_bytes(anchor, real.relative_to(anchor).as_posix(), MAX_CHARS * 4)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def load_agents_md(workdir: Path) -> str:
    """Every AGENTS.md from the repository root to `workdir`, outermost first, each under its path."""
    workdir = workdir.resolve()
    root = repo_root(workdir)
    chain = [workdir, *workdir.parents]
    folders = list(reversed(chain[: chain.index(root) + 1])) if root in chain else [workdir]
    parts = []
    for folder in folders:
        candidate = folder / "AGENTS.md"
        # The workspace's own files are the sandbox's to change: a link there is followed only while it stays
        # inside the workspace. Folders above it (up to the repository root) answer to the repository root.
        text = read_instructions(workdir if folder.is_relative_to(workdir) else root, candidate)
        if text is not None:
            text = text.strip()
            rel = candidate.relative_to(root) if candidate.is_relative_to(root) else candidate
            parts.append(f'<instructions source="{rel}">\n{text[:MAX_CHARS]}\n</instructions>')
    return "\n".join(parts)
