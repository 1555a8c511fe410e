"""The repositories in the workspace other than the one restore.py keeps read-only, checked after each command.

repo_watch.py says where a git dir or a `.git` pointer appeared; this module keeps one state per git dir and
pointer (what it held at the session's start), and has repo_scrub.py take out what a command added that
would run a program. A pointer (a `.git` file or link) or a `commondir` leads git to another git dir: one
that leads inside the workspace adds that git dir to those checked; one that leads out, or through a link
(git follows it; our no-follow reads could not check what is behind it), is removed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.hostsafe import fs as safe_fs
from kimi_cli.kernel.contain import below, inside_any
from kimi_cli.sandbox.guard.repo_scrub import MAX_LINK_BYTES, GitDirState, Removed, Stamp, _lstat, _stamp
from kimi_cli.sandbox.guard.repo_watch import TreeWatch

MAX_REPOS = 500  # git dirs and pointers followed; a command that makes more gets the rest reported unchecked


@dataclass
class PointerState:
    """A `.git` file or link: its text at the session's start (None: made since), and where it leads now."""

    rel: str
    start: bytes | None
    stamp: Stamp | None = None
    target: str | None = None


class WorkspaceRepos:
    """Git dirs and pointers found in the workspace; `skip` names those restore.py puts back instead."""

    def __init__(self, workspace: Path, skip: set[str]) -> None:
        self.workspace = workspace
        self.skip = skip
        self.dirs: dict[str, GitDirState] = {}
        self.pointers: dict[str, PointerState] = {}
        self.unchecked: set[str] = set()
        with safe_fs.rooted(workspace) as root_fd:
            self.tree = TreeWatch(root_fd)
            for rel in sorted(self.tree.found.pointers):
                self._add_pointer(root_fd, rel, start=True)
            for rel in sorted(self.tree.found.git_dirs):
                self._add_dir(root_fd, rel, start=True)
            for pointer in list(self.pointers.values()):  # what a pointer led to at the start is a baseline too
                self._follow(root_fd, pointer, start=True)

    def close(self) -> None:
        self.tree.close()

    def check(self) -> list[Removed]:
        """Find what changed since the last check and take out what it added that runs a program."""
        removed: list[Removed] = []
        with safe_fs.rooted(self.workspace) as root_fd:
            found = self.tree.scan(root_fd)
            for rel in sorted(found.pointers):
                self._add_pointer(root_fd, rel, start=False)
            for rel in sorted(found.git_dirs):
                self._add_dir(root_fd, rel, start=False)
            for pointer in list(self.pointers.values()):
                removed += self._check_pointer(root_fd, pointer)
            pending = list(self.dirs.values())
            while pending:
                state = pending.pop()
                if state.rel not in self.dirs or state.stamps(root_fd) == state.stamp:
                    continue
                if state.referrers and not self._real(state.rel):
                    removed += self._drop_referrers(root_fd, state)
                    continue
                gone, common = state.check(root_fd)
                removed += gone
                if common is not None:
                    target = self._git_dir_named(state.rel, common)
                    if target is None:
                        removed += self._remove(root_fd, f"{state.rel}/commondir", state.rel, "commondir", common)
                    else:
                        pending += self._add_dir(root_fd, target, start=False, referrer=f"{state.rel}/commondir")
                for inner in state.inner_git_dirs(root_fd):
                    pending += self._add_dir(root_fd, inner, start=False)
        return removed

    def _add_dir(self, root_fd: int, rel: str, start: bool, referrer: str | None = None) -> list[GitDirState]:
        if inside_any(rel, self.skip):
            return []
        state = self.dirs.get(rel)
        if state is None:
            if len(self.dirs) + len(self.pointers) >= MAX_REPOS:
                self.unchecked.add(rel)
                return []
            state = self.dirs[rel] = GitDirState(rel)
            if start:
                state.record(root_fd)
        if referrer is not None:
            state.referrers.add(referrer)
        return [state]

    def _add_pointer(self, root_fd: int, rel: str, start: bool) -> None:
        if rel in self.skip or rel in self.pointers:
            return
        if len(self.dirs) + len(self.pointers) >= MAX_REPOS:
            self.unchecked.add(rel)
            return
        text = None
        if start:
            st = _lstat(root_fd, rel)
            text = _pointer_text(root_fd, rel, st) if st is not None else None
        self.pointers[rel] = PointerState(rel, text, _stamp(_lstat(root_fd, rel)) if start else None)

    def _follow(self, root_fd: int, pointer: PointerState, start: bool) -> None:
        st = _lstat(root_fd, pointer.rel)
        text = _pointer_text(root_fd, pointer.rel, st) if st is not None else None
        where = _gitdir(text)
        pointer.target = None if where is None else self._git_dir_named(os.path.dirname(pointer.rel), where)
        if pointer.target is not None:
            self._add_dir(root_fd, pointer.target, start, referrer=pointer.rel)

    def _check_pointer(self, root_fd: int, pointer: PointerState) -> list[Removed]:
        st = _lstat(root_fd, pointer.rel)
        if st is None:
            pointer.stamp, pointer.target = None, None
            return []
        if _stamp(st) == pointer.stamp and (pointer.target is None or self._real(pointer.target)):
            return []
        pointer.stamp = _stamp(st)
        text = _pointer_text(root_fd, pointer.rel, st)
        where = _gitdir(text)
        if text == pointer.start or where is None:  # as at the start, or not a pointer git would follow
            return []
        target = self._git_dir_named(os.path.dirname(pointer.rel), where)
        if target is None:
            pointer.stamp = None
            return self._remove(root_fd, pointer.rel, pointer.rel, ".git", where)
        pointer.target = target
        self._add_dir(root_fd, target, start=False, referrer=pointer.rel)
        return []

    def _drop_referrers(self, root_fd: int, state: GitDirState) -> list[Removed]:
        """The git dir is reached through a link now: what leads to it (and was not there at the start) goes."""
        removed: list[Removed] = []
        for rel in sorted(state.referrers):
            pointer = self.pointers.get(rel)
            if pointer is not None and pointer.start is not None:
                continue
            where = state.rel + " (through a link)"
            removed += self._remove(
                root_fd, rel, os.path.dirname(rel) if pointer is None else rel, rel.rsplit("/", 1)[-1], where
            )
        state.referrers.clear()
        return removed

    def _remove(self, root_fd: int, rel: str, repository: str, setting: str, value: str) -> list[Removed]:
        from kimi_cli.sandbox.guard.restore import _remove_tree

        try:
            _remove_tree(root_fd, rel)
        except OSError:
            return [Removed(repository, setting, f"{value[:160]} (could NOT be removed)")]
        return [Removed(repository, setting, value[:200])]

    def _git_dir_named(self, base: str, text: str) -> str | None:
        """The workspace-relative git dir a pointer's text names, or None: outside, or through a link."""
        if not text or "\0" in text:
            return None
        path = Path(os.path.normpath(os.path.join(self.workspace, base, text)))
        rel = below(self.workspace, path)
        return rel if rel and self._real(rel) else None

    def _real(self, rel: str) -> bool:
        """No link on the way: where git goes (following links) is where our no-follow reads go."""
        path = os.path.join(self.workspace, rel)
        return os.path.realpath(path) == os.path.normpath(path)


def _pointer_text(root_fd: int, rel: str, st: os.stat_result) -> bytes | None:
    with contextlib.suppress(OSError, ValueError):
        if stat.S_ISLNK(st.st_mode):
            return b"link:" + safe_fs.readlink_at(root_fd, rel).encode("utf-8", "surrogateescape")
        if stat.S_ISREG(st.st_mode):
            return safe_fs.read_at(root_fd, rel, MAX_LINK_BYTES)[0]
    return None


def _gitdir(text: bytes | None) -> str | None:
    """Where a pointer sends git: a link's target, or a gitfile's `gitdir:` line."""
    if text is None:
        return None
    if text.startswith(b"link:"):
        return text[5:].decode("utf-8", "surrogateescape")
    line = text.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
    return line[len("gitdir:") :].strip() if line.startswith("gitdir:") else None
