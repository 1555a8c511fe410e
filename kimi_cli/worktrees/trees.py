"""Linked git worktrees kimi makes, lists, merges and removes: every git call on the host, through
kimi_cli.hostsafe.git.host (no hooks, no fsmonitor, no filter drivers, confined), on repositories opened by
repo_guard (a worktree's `.git` file leads to `<repository>/.git/worktrees/<name>`, which backlinks.py accepts
only when that folder's `gitdir` names this checkout back).

Layout: the checkouts sit beside the repository, in `<parent>/<repo>.worktrees/<name>`, on branch
`kimi/<name>`. Outside the main checkout, so that its `git status`, its pack and its sandbox never see them,
and outside ~/.kimi, which every sandbox hides.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from kimi_cli.errors import ConfigError, KimiError
from kimi_cli.hostsafe.git.host import run_git
from kimi_cli.hostsafe.git.location import RepoLocation, UnsafeRepository
from kimi_cli.hostsafe.git.repo_guard import note_own_worktree, open_repo

BRANCH_PREFIX = "kimi/"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Who commits a worktree's pending changes when the repository names nobody (kimi never asks for an identity).
FALLBACK_IDENTITY = (("user.name", "kimi"), ("user.email", "kimi@localhost"))


@dataclass(frozen=True)
class Worktree:
    """One linked worktree: its name, checkout folder, branch and the commit it started from."""

    name: str
    path: Path
    branch: str
    base: str = ""


@dataclass
class MergeResult:
    """What merging a branch into a checkout did: merged, or conflicted (the hunks, and the files)."""

    merged: bool
    message: str
    conflicts: list[str]
    hunks: str = ""


def _git(cwd: Path, location: RepoLocation, *args: str, writable: tuple[Path, ...] = (),
         extra: tuple[tuple[str, str], ...] = ()) -> tuple[int, str, str]:  # fmt: skip
    try:
        out = run_git(args, cwd, location, timeout=120, also_writable=writable, extra=extra)
    except UnsafeRepository as exc:
        raise KimiError(str(exc)) from None
    return out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace")


def _open(root: Path) -> RepoLocation:
    try:
        location = open_repo(root)
    except UnsafeRepository as exc:
        raise KimiError(str(exc)) from None
    if location is None:
        raise ConfigError(f"{root} is not in a git repository: worktrees need one")
    return location


def main_root(root: Path) -> Path:
    """The main checkout of the repository `root` is in (a linked worktree's main one, or root's own)."""
    location = _open(root)
    return location.common_dir.parent if location.common_dir.name == ".git" else location.work_tree


def home_of(root: Path) -> Path:
    """The folder the repository's kimi worktrees live in."""
    main = main_root(root)
    return main.parent / f"{main.name}.worktrees"


def new_name() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + f"-{time.monotonic_ns() % 10000:04d}"


def create(root: Path, name: str | None = None, base: str = "HEAD") -> Worktree:
    """A new worktree of root's repository on a new branch `kimi/NAME` from `base`; an existing kimi
    worktree of that name is reused."""
    name = name or new_name()
    if not NAME.match(name):
        raise ConfigError(f"worktree name {name!r}: letters, digits, '.', '_' and '-' only (up to 64)")
    main = main_root(root)
    location = _open(main)
    path = home_of(main) / name
    for tree in list_worktrees(main):
        if tree.name == name:
            return tree
    if path.exists():
        raise ConfigError(f"{path} exists and is not one of this repository's worktrees")
    code, head, err = _git(main, location, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    if code != 0:
        raise ConfigError(f"worktree {name}: {base} is not a commit (a repository needs one commit first)")
    branch = BRANCH_PREFIX + name
    path.parent.mkdir(parents=True, exist_ok=True)
    args = ("worktree", "add", "--quiet", "-b", branch, str(path), head.strip())
    code, _, err = _git(main, location, *args, writable=(path.parent,))
    if code != 0:
        raise KimiError(f"git worktree add failed: {err.strip()}")
    # git names the admin folder after the checkout's folder (a suffix when taken): find the one for this path
    admin = _admin_name(location, path)
    note_own_worktree(main, admin, path / ".git")
    return Worktree(name, path.resolve(), branch, head.strip())


def _admin_name(location: RepoLocation, path: Path) -> str:
    from kimi_cli.hostsafe.git.location import read_small

    folder = location.common_dir / "worktrees"
    for entry in sorted(folder.iterdir()) if folder.is_dir() else []:
        try:
            if Path(read_small(entry / "gitdir").strip()).resolve() == (path / ".git").resolve():
                return entry.name
        except OSError:
            continue
    return path.name


def list_worktrees(root: Path) -> list[Worktree]:
    """kimi's worktrees of root's repository (those on a `kimi/` branch), as git lists them."""
    main = main_root(root)
    location = _open(main)
    code, out, err = _git(main, location, "worktree", "list", "--porcelain")
    if code != 0:
        raise KimiError(f"git worktree list failed: {err.strip()}")
    found: list[Worktree] = []
    for block in out.strip().split("\n\n"):
        fields = dict(line.partition(" ")[::2] for line in block.splitlines() if line)
        branch = fields.get("branch", "").removeprefix("refs/heads/")
        if not branch.startswith(BRANCH_PREFIX) or "worktree" not in fields:
            continue
        found.append(Worktree(branch.removeprefix(BRANCH_PREFIX), Path(fields["worktree"]), branch))
    return found


def find(root: Path, name: str) -> Worktree:
    for tree in list_worktrees(root):
        if tree.name == name or tree.branch == name:
            return tree
    raise ConfigError(f"no kimi worktree named {name!r} (kimi worktree list shows them)")


def _identity(cwd: Path, location: RepoLocation) -> tuple[tuple[str, str], ...]:
    named = _git(cwd, location, "config", "user.email")[0] == 0
    return () if named else FALLBACK_IDENTITY


def commit_pending(tree: Worktree, message: str) -> bool:
    """Commit everything the worktree's checkout changed (new files too) on its branch; whether it did."""
    location = _open(tree.path)
    if not _git(tree.path, location, "status", "--porcelain")[1].strip():
        return False
    code, _, err = _git(tree.path, location, "add", "-A")
    if code == 0:
        extra = _identity(tree.path, location)
        code, _, err = _git(tree.path, location, "commit", "-q", "--no-verify", "-m", message, extra=extra)
    if code != 0:
        raise KimiError(f"committing the worktree {tree.name} failed: {err.strip()}")
    return True


def changes(root: Path, tree: Worktree, base: str | None = None) -> tuple[int, int]:
    """(commits on the branch since `base` or the main checkout's HEAD, lines added + deleted)."""
    main = main_root(root)
    location = _open(main)
    since = base or _git(main, location, "merge-base", "HEAD", tree.branch)[1].strip() or "HEAD"
    commits = _git(main, location, "rev-list", "--count", f"{since}..{tree.branch}")[1].strip()
    _, numstat, _ = _git(main, location, "diff", "--numstat", since, tree.branch)
    lines = 0
    for row in numstat.splitlines():
        added, deleted = [*row.split("\t"), "0", "0"][:2]
        lines += (int(added) if added.isdigit() else 1) + (int(deleted) if deleted.isdigit() else 1)
    return int(commits or 0), lines


def merge(target: Path, branch: str, message: str | None = None) -> MergeResult:
    """Merge `branch` into the checkout `target` with real git. A conflict is left in place for whoever
    resolves it (the model or the user), and said: the files and their conflicted hunks."""
    location = _open(target)
    extra = _identity(target, location)
    args = ["merge", "--no-edit", "--no-verify"]
    if message:
        args += ["-m", message]
    code, out, err = _git(target, location, *args, branch, extra=extra)
    if code == 0:
        return MergeResult(True, out.strip() or f"merged {branch}", [])
    _, unmerged, _ = _git(target, location, "diff", "--name-only", "--diff-filter=U")
    files = [f for f in unmerged.splitlines() if f]
    if not files:  # refused before it started (local changes in the way, unrelated histories, ...)
        return MergeResult(False, (err.strip() or out.strip() or "git merge failed"), [])
    _, hunks, _ = _git(target, location, "diff", "--", *files)
    why = (f"merging {branch} conflicted in {', '.join(files)}: resolve the conflict markers, then commit "
           "(or abort with git merge --abort)")  # fmt: skip
    return MergeResult(False, why, files, hunks)


def remove(root: Path, name: str, keep_branch: bool = False, force: bool = False) -> Worktree:
    """Remove a kimi worktree's checkout and (unless kept) its branch."""
    tree = find(root, name)
    main = main_root(root)
    location = _open(main)
    args = ["worktree", "remove", *(["--force"] if force else []), str(tree.path)]
    code, _, err = _git(main, location, *args, writable=(tree.path.parent,))
    if code != 0:
        raise KimiError(f"git worktree remove failed: {err.strip()} (--force drops its uncommitted changes)")
    if not keep_branch:
        code, _, err = _git(main, location, "branch", "-D", tree.branch)
        if code != 0:
            raise KimiError(f"the worktree is gone but its branch stays: {err.strip()}")
    return tree


def rename_branch(root: Path, old: str, new: str) -> None:
    """Rename a branch no worktree has checked out (the attempt kept, once its worktree is removed)."""
    main = main_root(root)
    code, _, err = _git(main, _open(main), "branch", "-m", old, new)
    if code != 0:
        raise KimiError(f"renaming the branch {old} to {new} failed: {err.strip()}")


def exit_line(root: Path, tree: Worktree) -> str:
    """The one line a session in a worktree ends with: branch, commits, and how to merge or remove it."""
    location = _open(tree.path)
    pending = bool(_git(tree.path, location, "status", "--porcelain")[1].strip())
    commits, lines = changes(root, tree, tree.base or None)
    more = " and uncommitted changes" if pending else ""
    return (f"worktree {tree.name}: branch {tree.branch}, {commits} commit(s){more}, {lines} changed line(s); "
            f"merge: kimi worktree merge {tree.name}; remove: kimi worktree remove {tree.name}")  # fmt: skip
