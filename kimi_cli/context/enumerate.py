"""Enumerate a repository's files with the ignore rules a developer expects, and say why each skip happened."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.tools.files import looks_binary

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
    from kimi_cli.tools.host_git import workspace_git  # hardened: the repository's config runs nothing

    out = workspace_git(root, ["ls-files", "--cached", "--others", "--exclude-standard", "-z"])
    if out is not None and out.returncode == 0:
        names = {os.fsdecode(n) for n in out.stdout.split(b"\0") if n}
        # The index still lists tracked files deleted from the work tree: they are gone.
        names = {n for n in names if os.path.lexists(root / n)}
        return sorted(_apply_kimiignore(root, names))
    return sorted(_apply_kimiignore(root, _walk(root)))


def _apply_kimiignore(root: Path, names: set[str] | list[str]) -> list[str]:
    ignore = root / ".kimiignore"
    if not ignore.is_file():
        return list(names)
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(ignore.read_text(errors="replace").splitlines())
    return [n for n in names if not spec.match_file(n)]


def _walk(root: Path) -> list[str]:
    """Walk without following symlinks (no loops), honouring .gitignore files at every level."""
    import pathspec

    found: list[str] = []
    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        specs = [(base, s) for base, s in specs if rel_dir.startswith(base)]
        gitignore = Path(dirpath) / ".gitignore"
        if gitignore.is_file():
            try:
                lines = gitignore.read_text(errors="replace").splitlines()
                specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
            except OSError:
                pass

        def ignored(rel: str, active: list[tuple[str, pathspec.GitIgnoreSpec]] = specs) -> bool:
            return any(spec.match_file(rel[len(base) :]) for base, spec in active)

        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = sorted(
            d for d in dirnames if d not in links and d not in ALWAYS_SKIP_DIRS and not ignored(rel_dir + d + "/")
        )
        found += [rel_dir + f for f in [*filenames, *links] if not ignored(rel_dir + f)]
    return found


def classify_name(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    if name in LOCK_FILES:
        return "lock-file"
    if name.endswith(GENERATED_SUFFIXES):
        return "generated"
    return None


def read_record(root: Path, path: str, max_bytes: int) -> FileRecord:
    full = root / path
    try:
        st = full.lstat()
    except OSError:
        return FileRecord(_display(path), 0, reason="unreadable")
    if stat.S_ISLNK(st.st_mode):
        return FileRecord(_display(path), st.st_size, reason="symlink")
    if not stat.S_ISREG(st.st_mode):
        return FileRecord(_display(path), st.st_size, reason="not-a-file")
    reason = classify_name(path)
    if reason:
        return FileRecord(_display(path), st.st_size, reason=reason)
    if st.st_size > max_bytes:
        return FileRecord(_display(path), st.st_size, reason="too-large")
    try:
        data = full.read_bytes()
    except OSError:
        return FileRecord(_display(path), st.st_size, reason="unreadable")
    if looks_binary(data):
        return FileRecord(_display(path), st.st_size, reason="binary")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return FileRecord(_display(path), st.st_size, reason="not-utf8")
    return FileRecord(_display(path), st.st_size, text=text)


def enumerate_files(root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[FileRecord]:
    return [read_record(root, p, max_bytes) for p in list_paths(root)]
