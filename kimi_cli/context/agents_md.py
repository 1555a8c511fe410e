"""AGENTS.md: project instructions, merged from the repository root down to the working directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

MAX_CHARS = 40_000


def repo_root(workdir: Path) -> Path:
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=workdir, capture_output=True, text=True)
    except OSError:
        return workdir
    top = out.stdout.strip()
    return Path(top).resolve() if out.returncode == 0 and top else workdir


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
