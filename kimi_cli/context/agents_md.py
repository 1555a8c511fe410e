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


def load_agents_md(workdir: Path) -> str:
    """Every AGENTS.md from the repository root to `workdir`, outermost first, each under its path."""
    workdir = workdir.resolve()
    root = repo_root(workdir)
    chain = [workdir, *workdir.parents]
    folders = list(reversed(chain[: chain.index(root) + 1])) if root in chain else [workdir]
    parts = []
    for folder in folders:
        candidate = folder / "AGENTS.md"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                continue
            rel = candidate.relative_to(root) if candidate.is_relative_to(root) else candidate
            parts.append(f'<instructions source="{rel}">\n{text[:MAX_CHARS]}\n</instructions>')
    return "\n".join(parts)
