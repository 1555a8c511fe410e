"""Listing and reading workspace files: .gitignore respected, binaries and bad encodings detected."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

ALWAYS_SKIP_DIRS = {".git", ".hg", ".svn"}
SNIFF_BYTES = 8192


def is_git_repo(root: Path) -> bool:
    from kimi_cli.tools.host_git import workspace_git

    out = workspace_git(root, ["rev-parse", "--is-inside-work-tree"], timeout=10)
    return out is not None and out.returncode == 0 and out.stdout.strip() == b"true"


def list_files(root: Path) -> list[str]:
    """Workspace-relative paths of files that are not ignored, sorted (git through host_git: hardened)."""
    from kimi_cli.tools.host_git import workspace_git

    if is_git_repo(root):
        out = workspace_git(root, ["ls-files", "--cached", "--others", "--exclude-standard", "-z"])
        if out is not None and out.returncode == 0:
            names = {os.fsdecode(n) for n in out.stdout.split(b"\0") if n}
            return sorted(n for n in names if (root / n).is_file() or (root / n).is_symlink())
    return _walk(root)


def _walk(root: Path) -> list[str]:
    import pathspec

    patterns: list[str] = []
    for name in (".gitignore", ".kimiignore"):
        with contextlib.suppress(OSError):
            patterns += (root / name).read_text(errors="replace").splitlines()
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(
            d for d in dirnames if d not in ALWAYS_SKIP_DIRS and not spec.match_file(rel_dir + d + "/")
        )
        for name in filenames:
            rel = rel_dir + name
            if not spec.match_file(rel):
                found.append(rel)
    return sorted(found)


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:SNIFF_BYTES]


def read_text(path: Path, max_bytes: int | None = None) -> tuple[str, bool]:
    """Read a text file; returns (text, valid_utf8). Raises ValueError for binary content."""
    with path.open("rb") as fh:
        data = fh.read() if max_bytes is None else fh.read(max_bytes)
    if looks_binary(data):
        raise ValueError("binary")
    try:
        return data.decode("utf-8"), True
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), False
