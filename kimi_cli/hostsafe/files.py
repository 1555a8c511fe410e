"""Listing and reading workspace files: .gitignore respected, binaries and bad encodings detected."""

from __future__ import annotations

import os
from pathlib import Path

ALWAYS_SKIP_DIRS = {".git", ".hg", ".svn"}
SNIFF_BYTES = 8192


def is_git_repo(root: Path) -> bool:
    from kimi_cli.hostsafe.git.workspace import workspace_git

    out = workspace_git(root, ["rev-parse", "--is-inside-work-tree"], timeout=10)
    return out is not None and out.returncode == 0 and out.stdout.strip() == b"true"


def list_files(root: Path) -> list[str]:
    """Workspace-relative paths of files that are not ignored, sorted (git through hostsafe/git/host.py: hardened)."""
    from kimi_cli.hostsafe.git.workspace import workspace_git

    if is_git_repo(root):
        out = workspace_git(root, ["ls-files", "--cached", "--others", "--exclude-standard", "-z"])
        if out is not None and out.returncode == 0:
            names = {os.fsdecode(n) for n in out.stdout.split(b"\0") if n}
            from kimi_cli.hostsafe.fs import existing

            # Only names with real folders above them: a folder swapped for a link names nothing outside.
            return sorted(existing(root, sorted(names), dirs=False))
    return _walk(root)


def _walk(root: Path) -> list[str]:
    """Outside git: the root's .gitignore and .kimiignore, walked from folder descriptors (links listed, never
    entered; depth bounded: see kimi_cli.hostsafe.walk)."""
    import pathspec

    from kimi_cli.hostsafe.walk import walk

    found: list[str] = []
    spec: pathspec.GitIgnoreSpec | None = None
    for folder in walk(root):
        if spec is None:
            patterns: list[str] = []
            for name in (".gitignore", ".kimiignore"):
                patterns += (folder.read(name) or b"").decode(errors="replace").splitlines()
            spec = pathspec.GitIgnoreSpec.from_lines(patterns)
        folder.dirs[:] = [
            d for d in folder.dirs if d not in ALWAYS_SKIP_DIRS and not spec.match_file(folder.rel + d + "/")
        ]
        found += [folder.rel + n for n in (*folder.files, *folder.links) if not spec.match_file(folder.rel + n)]
    return sorted(found)


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:SNIFF_BYTES]
