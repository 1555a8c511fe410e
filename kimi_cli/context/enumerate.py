"""Enumerate a repository's files with the ignore rules a developer expects, and say why each skip happened."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.hostsafe.files import looks_binary

DEFAULT_MAX_BYTES = 1_000_000
LOCK_FILES = {
    "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "Pipfile.lock", "uv.lock", "Cargo.lock",
    "Gemfile.lock", "composer.lock", "go.sum", "flake.lock", "bun.lockb", "pdm.lock", "mix.lock",
}  # fmt: skip
GENERATED_SUFFIXES = (".min.js", ".min.css", ".map", "_pb2.py", "_pb2_grpc.py", ".pb.go", ".snap", ".lock")
ALWAYS_SKIP_DIRS = {".git", ".hg", ".svn"}


@dataclass
class FileRecord:
    """One file of the repository: its text when it is packable, else the reason it is not."""

    path: str
    size: int
    text: str | None = None
    reason: str | None = None  # binary, too-large, lock-file, generated, symlink, unreadable, not-utf8

    @property
    def packable(self) -> bool:
        return self.text is not None


def _display(name: bytes | str) -> str:
    raw = os.fsencode(name) if isinstance(name, str) else name
    return raw.decode("utf-8", errors="replace")


def list_paths(root: Path) -> list[str]:
    """Tracked plus untracked-but-not-ignored files (git), or a walk with the same rules outside git."""
    from kimi_cli.hostsafe.git.workspace import workspace_git  # hardened: the repository's config runs nothing

    out = workspace_git(root, ["ls-files", "--cached", "--others", "--exclude-standard", "-z"])
    if out is not None and out.returncode == 0:
        names = {os.fsdecode(n) for n in out.stdout.split(b"\0") if n}
        # The index still lists tracked files deleted from the work tree: they are gone. A name under a folder
        # that is now a link (`inc/x`, `inc -> /elsewhere`) is gone too: nothing outside is even named.
        from kimi_cli.hostsafe.fs import existing

        names = set(existing(root, sorted(names)))
        return sorted(_apply_kimiignore(root, names))
    return sorted(_apply_kimiignore(root, _walk(root)))


def _apply_kimiignore(root: Path, names: set[str] | list[str]) -> list[str]:
    from kimi_cli.hostsafe import fs as safe_fs

    try:  # a link here is not followed: its target is not this workspace's to read
        data = safe_fs.read_bytes(root, ".kimiignore", 1 << 20)
    except OSError:
        return list(names)
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(data.decode(errors="replace").splitlines())
    return [n for n in names if not spec.match_file(n)]


def _walk(root: Path) -> list[str]:
    """Walk from folder descriptors (kimi_cli.hostsafe.walk: iterative, depth-bounded, links listed and never
    entered), honouring .gitignore files at every level."""
    import pathspec

    from kimi_cli.hostsafe.walk import walk

    found: list[str] = []
    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    for folder in walk(root):
        rel_dir = folder.rel
        specs = [(base, s) for base, s in specs if rel_dir.startswith(base)]
        data = folder.read(".gitignore")
        if data:
            specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(data.decode(errors="replace").splitlines())))

        def ignored(rel: str, active: list[tuple[str, pathspec.GitIgnoreSpec]] = specs) -> bool:
            return any(spec.match_file(rel[len(base) :]) for base, spec in active)

        folder.dirs[:] = [d for d in folder.dirs if d not in ALWAYS_SKIP_DIRS and not ignored(rel_dir + d + "/")]
        found += [rel_dir + f for f in [*folder.files, *folder.links] if not ignored(rel_dir + f)]
    return found


def classify_name(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    if name in LOCK_FILES:
        return "lock-file"
    if name.endswith(GENERATED_SUFFIXES):
        return "generated"
    return None


def read_record(root: Path, path: str, max_bytes: int, root_fd: int | None = None) -> FileRecord:
    """One file, read through kimi_cli.hostsafe.fs: a link (the file itself, or a folder on the way) is
    recorded as a link and never followed; type and size come from the opened descriptor."""
    from kimi_cli.hostsafe import fs as safe_fs

    if root_fd is None:
        with safe_fs.rooted(root) as fd:
            return read_record(root, path, max_bytes, fd)
    shown = _display(path)
    try:
        fd, st = safe_fs.open_regular_at(root_fd, path)
    except safe_fs.UnsafePath:
        try:
            size = safe_fs.lstat_at(root_fd, path).st_size
        except OSError:
            size = 0
        return FileRecord(shown, size, reason="symlink")
    except safe_fs.NotRegularFile:
        return FileRecord(shown, 0, reason="not-a-file")
    except OSError:
        return FileRecord(shown, 0, reason="unreadable")
    with os.fdopen(fd, "rb") as fh:
        reason = classify_name(path) or ("too-large" if st.st_size > max_bytes else None)
        if reason:
            return FileRecord(shown, st.st_size, reason=reason)
        try:
            data = fh.read(max_bytes + 1)
        except OSError:
            return FileRecord(shown, st.st_size, reason="unreadable")
    if len(data) > max_bytes:
        return FileRecord(shown, len(data), reason="too-large")
    if looks_binary(data):
        return FileRecord(shown, st.st_size, reason="binary")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return FileRecord(shown, st.st_size, reason="not-utf8")
    return FileRecord(shown, st.st_size, text=text)


def enumerate_files(root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[FileRecord]:
    from kimi_cli.hostsafe.fs import rooted

    with rooted(root) as root_fd:
        return [read_record(root, p, max_bytes, root_fd) for p in list_paths(root)]
