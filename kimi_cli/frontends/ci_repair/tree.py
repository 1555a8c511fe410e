"""The working tree around a ci-repair run: the user's uncommitted changes, a branch of the run's own, files
the agent made that the fix does not need, and whether the fix commit really holds the fix.

All git here goes through kimi_cli.hostsafe.git.workspace.workspace_git (no hooks, no repository programs).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kimi_cli.errors import ConfigError
from kimi_cli.hostsafe.git.workspace import workspace_git

STASH_MESSAGE = "kimi ci-repair: the changes you had not committed"


def _git(root: Path, *args: str) -> tuple[int, str]:
    out = workspace_git(root, list(args))
    if out is None:
        return 1, ""
    return out.returncode, (out.stdout + out.stderr).decode("utf-8", "surrogateescape")


def status_entries(root: Path) -> list[tuple[str, str]]:
    """(two-letter status, path) of every change git sees, untracked files included, ignored ones not."""
    out = workspace_git(root, ["status", "--porcelain", "--untracked-files=all", "-z"])
    stdout = out.stdout.decode("utf-8", "surrogateescape") if out is not None else ""
    entries: list[tuple[str, str]] = []
    parts = stdout.split("\0")
    i = 0
    while i < len(parts):
        entry = parts[i]
        i += 1
        if not entry:
            continue
        entries.append((entry[:2], entry[3:]))
        if entry[0] in "RC":  # a rename's source path follows as its own field
            i += 1
    return entries


def head(root: Path) -> str | None:
    code, out = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    return (out.strip() or None) if code == 0 else None


def branch_exists(root: Path, name: str) -> bool:
    return _git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}")[0] == 0


def current_branch(root: Path) -> str:
    """The branch checked out (an attempt's worktree's own, kimi/...); a detached HEAD is refused."""
    code, out = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD")
    if code != 0 or not out.strip():
        raise ConfigError("--attempt-of: HEAD is not on a branch (an attempt runs in the worktree kimi made)")
    return out.strip()


def fresh_branch(root: Path, asked: str | None) -> str:
    """The run's own branch: --branch NAME when it does not exist yet (an existing one is refused: it holds
    another run's work), else kimi/ci-repair-<short sha>, then -2, -3... where that is taken."""
    if asked is not None:
        if branch_exists(root, asked):
            raise ConfigError(
                f"--branch {asked}: the branch exists already; each ci-repair run makes a branch of its own "
                "(name another, or delete that one)"
            )
        return asked
    base = f"kimi/ci-repair-{(head(root) or 'nohead')[:8]}"
    name, n = base, 1
    while branch_exists(root, name):
        n += 1
        name = f"{base}-{n}"
    return name


@dataclass
class Stash:
    """The user's uncommitted changes, put aside for the run and given back after it."""

    paths: list[str]
    taken: bool = False

    def restore(self, root: Path) -> str:
        """Give the changes back onto whatever branch the run left checked out; a message either way."""
        if not self.taken:
            return ""
        self.taken = False
        code, out = _git(root, "stash", "pop", "--index")
        if code != 0:
            code, out = _git(root, "stash", "pop")
        if code == 0:
            return f"your {len(self.paths)} uncommitted change(s) are back in the working tree"
        return (
            f"your uncommitted changes could not be put back ({out.strip()[-300:]}); they are kept in "
            f"`git stash list` as '{STASH_MESSAGE}': run `git stash pop` once the tree allows it"
        )


def stash_changes(root: Path) -> Stash:
    """Stash what the user had not committed (tracked edits and untracked files, not ignored ones), so that
    the tests run on the commit CI ran and the fix commit cannot take the user's edits in."""
    paths = [path for _, path in status_entries(root)]
    stash = Stash(paths)
    if not paths:
        return stash
    code, out = _git(root, "stash", "push", "--include-untracked", "-m", STASH_MESSAGE)
    if code != 0 or status_entries(root):
        raise ConfigError(
            f"the working tree has {len(paths)} uncommitted change(s) and they could not be stashed "
            f"({out.strip()[-300:]}); commit or stash them yourself, then run ci-repair again"
        )
    stash.taken = True
    return stash


def _inside(root: Path, path: str) -> Path | None:
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        return None
    return root / rel


class Aside:
    """New files moved out of the workspace for one test run, then put back where they were."""

    def __init__(self, root: Path, paths: list[str]) -> None:
        self.root = root
        self.holder = Path(tempfile.mkdtemp(prefix="kimi-ci-aside-"))
        self.moved: list[tuple[Path, Path]] = []
        for i, path in enumerate(paths):
            src = _inside(root, path)
            if src is None or (not src.is_symlink() and not src.exists()):
                continue
            dst = self.holder / str(i)
            shutil.move(str(src), str(dst))  # a link moves as a link
            self.moved.append((src, dst))

    def put_back(self) -> None:
        for src, dst in self.moved:
            src.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(dst), str(src))
        shutil.rmtree(self.holder, ignore_errors=True)


def committed_whole(root: Path, before: str | None, files: list[str]) -> bool:
    """True when HEAD is a new commit and none of `files` differs from it any more (a hook that refused the
    commit, or left part of it staged, makes this False)."""
    now = head(root)
    if now is None or now == before:
        return False
    return not [p for _, p in status_entries(root) if p in files]
