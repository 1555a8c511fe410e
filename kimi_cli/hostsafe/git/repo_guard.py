"""The repository kimi's host git may work on: found without running git, and refused when it changed.

Discovery mirrors git's (a `.git` folder or `gitdir:` file in the start folder or a parent; never a bare
repository), so that kimi names the repository to git itself (GIT_DIR, GIT_WORK_TREE) and repository
config cannot redirect it. A repository is refused when:
- its `.git` file, `commondir`, `objects/info/alternates` or worktree links point somewhere they did not
  point when the session started (outside the workspace, or into its writable tree instead of `.git`);
- its `.git` file, symlink or commondir leads to a git dir outside the workspace that does not name this
  work tree back (kimi_cli.hostsafe.git.backlinks), even when it did so at session start;
- its git folders are not the ones the session started with, or are reached through a symlink inside the
  workspace (kimi_cli.hostsafe.git.pin, which also hands them to git by descriptor);
- it belongs to another user and the user's own git config does not list it in safe.directory (git's rule,
  which git skips when GIT_DIR is given).
It also keeps the commit hooks seen at session start, for `[git] allow_hooks`.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kimi_cli.hostsafe.git import pin as git_pin
from kimi_cli.hostsafe.git.backlinks import foreign_link
from kimi_cli.hostsafe.git.hardening import HARDENING, base_env, config_parameters
from kimi_cli.hostsafe.git.location import RepoLocation, UnsafeRepository, read_small
from kimi_cli.kernel.contain import inside

HOOK_NAMES = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-merge-commit",
              "post-rewrite", "reference-transaction", "post-index-change")  # fmt: skip
MAX_HOOK_BYTES = 1024 * 1024
MAX_ALTERNATES_BYTES = 1024 * 1024
# Repository settings that name a program git would run: for the warning (hardening.py and host.py override or
# neutralise them all, and confine.py stops the rest) and for the sandbox, which removes those a command added to a
# repository (kimi_cli/sandbox/guard/repo_scrub.py). Includes count: what they bring in is not looked at.
PROGRAM_KEY = re.compile(
    r"^(core\.(fsmonitor|hookspath|pager|editor|sshcommand|askpass|gitproxy|alternaterefscommand)|sequence\.editor"
    r"|diff\.external|diff\..+\.(command|textconv)|filter\..+\.(clean|smudge|process)|merge\..+\.driver"
    r"|(merge|diff)tool\..+\.(cmd|path)|gpg\.(.+\.)?program|gpg\.ssh\.defaultkeycommand|credential\.(.+\.)?helper"
    r"|pager\..+|alias\..+|uploadpack\.packobjectshook|remote\..+\.(uploadpack|receivepack)|hook\..+\.command"
    r"|trailer\..+\.(command|cmd)|include\.path|includeif\..+\.path|submodule\..+\.update|interactive\.difffilter"
    r"|sendemail\.(.+\.)?(smtpserver|tocmd|cccmd|headercmd)|imap\.tunnel|guitool\..+\.cmd|(browser|man)\..+\.(cmd|path)"
    r"|instaweb\..+|protocol\.(ext\.)?allow)$",
    re.IGNORECASE | re.DOTALL,
)
BANG_ONLY = re.compile(r"^(alias\..+|submodule\..+\.update)$", re.IGNORECASE | re.DOTALL)  # a program only with `!`
# protocol.allow / protocol.ext.allow: anything but "never" lets a remote's `ext::sh -c ...` URL (or one an
# insteadOf rewrites to it) run its command at the user's `git fetch`, `pull` or an editor's auto-fetch
# (git's default for ext is never; protocol.file.allow and the others enable no command of the repository's).
TRANSPORT = re.compile(r"^protocol\.(ext\.)?allow$", re.IGNORECASE | re.DOTALL)


def names_program(key: str, value: str | None) -> bool:
    """Whether a config entry (as `git config --list` names it) makes git run a program."""
    if not PROGRAM_KEY.match(key):
        return False
    if TRANSPORT.match(key):
        return (value or "").strip().lower() != "never"
    return not BANG_ONLY.match(key) or (value or "").lstrip().startswith("!")


def _read_gitfile(dot_git: Path) -> Path | None:
    try:
        text = read_small(dot_git, follow=False).strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    return (dot_git.parent / target).resolve() if not target.is_absolute() else target.resolve()


def _is_git_dir(path: Path) -> bool:
    common = path
    commondir = path / "commondir"
    if commondir.is_file():
        try:
            raw = read_small(commondir).strip()
        except OSError:
            return False
        common = (path / raw).resolve() if raw else path
    return (path / "HEAD").is_file() and (common / "objects").is_dir() and (common / "refs").is_dir()


def find_repo(start: Path, workspace: Path | None = None) -> RepoLocation | None:
    """The repository that holds `start`, found as git finds it (a `.git` folder or `gitdir:` file in it or a
    parent), without running git. Bare repositories are never picked up by discovery."""
    start = start.resolve()
    workspace = (workspace or start).resolve()
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        try:
            mode = dot_git.lstat().st_mode
        except OSError:
            continue
        # One lstat says what `.git` is: asking again (is_dir, then is_symlink) races a command that swaps it.
        git_dir: Path | None
        if stat.S_ISREG(mode):
            git_dir, kind = _read_gitfile(dot_git), "gitfile"
        elif stat.S_ISDIR(mode):
            git_dir, kind = dot_git, ""  # as named, not resolved: pin.py opens this path without following links
        elif stat.S_ISLNK(mode):
            git_dir, kind = dot_git.resolve(), "symlink"
        else:
            continue
        if git_dir is None or not _is_git_dir(git_dir):
            continue
        return _located(folder, git_dir, workspace, kind)
    return None


def _located(work_tree: Path, git_dir: Path, workspace: Path, kind: str) -> RepoLocation:
    own = workspace / ".git"  # not resolved: a `.git` swapped for a link meanwhile must not move it
    links: set[str] = set()

    def note(name: str, target: Path) -> None:
        if not inside(target, own):  # outside the workspace's .git: outside the workspace, or in its tree
            links.add(f"{name} -> {target}")

    if kind:
        note(f".git {kind}", git_dir)
    elif not inside(work_tree, workspace):
        note("repository above the workspace", git_dir)
    common = git_dir
    commondir = git_dir / "commondir"
    if commondir.is_file():
        raw = read_small(commondir).strip()
        common = (git_dir / raw).resolve()
        note("commondir", common)
    for objects in {git_dir / "objects", common / "objects"}:
        alternates = objects / "info" / "alternates"
        if alternates.is_file():
            for line in read_small(alternates, MAX_ALTERNATES_BYTES).splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    note("objects/info/alternates", (objects / line).resolve())
    worktrees = common / "worktrees"
    if worktrees.is_dir():
        for entry in sorted(worktrees.iterdir()):
            link = entry / "gitdir"
            if link.is_file():
                raw = read_small(link).strip()
                note(f"worktree {entry.name}", (entry / raw).resolve())
    return RepoLocation(work_tree, git_dir, common, frozenset(links), kind, workspace)


@dataclass
class SessionBaseline:
    """What a workspace's repository looked like when the session started: its links and its hooks."""

    links: frozenset[str] = frozenset()
    hooks: dict[str, tuple[bytes, int]] = field(default_factory=dict)  # name -> (content, mode)
    hooks_dir: Path | None = None
    programs: frozenset[str] = frozenset()  # "key=value" of repository settings that name a program
    pins: dict[Path, tuple[int, tuple[int, int]]] = field(default_factory=dict)  # git folder -> (held fd, id)


_BASELINES: dict[Path, SessionBaseline] = {}


def remember_session_start(workspace: Path) -> SessionBaseline:
    """Record the repository's links and hook files now; later calls compare against this."""
    workspace = workspace.resolve()
    from kimi_cli.hostsafe.programs import sandbox_writable

    sandbox_writable(workspace)  # before any git runs: host git is never found on a PATH entry in here
    from kimi_cli.hostsafe.git.host import prime_gitpython

    prime_gitpython()
    location = find_repo(workspace, workspace)
    baseline = SessionBaseline()
    if workspace in _BASELINES:
        git_pin.release(_BASELINES[workspace].pins)
    if location is not None:
        baseline.pins = git_pin.pin_start(location)
        baseline.links = location.links
        baseline.hooks_dir, baseline.hooks = _read_hooks(location)
        baseline.programs = program_settings(location)
    _BASELINES[workspace] = baseline
    return baseline


def note_own_worktree(workspace: Path, name: str, target: Path) -> None:
    """Take a linked worktree kimi itself just added (kimi_cli.worktrees) into the session's baseline, so that
    open_repo does not refuse the repository for a link kimi made; a link a command planted stays refused."""
    known = baseline(workspace)
    location = find_repo(workspace.resolve(), workspace.resolve())
    if location is None:
        return
    link = f"worktree {name} -> {target.resolve()}"
    if link in location.links:
        known.links = known.links | {link}


def program_settings(location: RepoLocation) -> frozenset[str]:
    """The repository's own settings (local and worktree config, includes followed) that name a program."""
    from kimi_cli.hostsafe.git.host import spawn

    env = base_env()
    env.update(GIT_DIR=str(location.git_dir), GIT_WORK_TREE=str(location.work_tree))
    env["GIT_CONFIG_PARAMETERS"] = config_parameters(HARDENING)
    try:
        out = spawn(["git", "config", "--list", "--show-scope", "-z"], env, location.work_tree, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    items = out.stdout.decode("utf-8", "replace").split("\0")
    found = set()
    for scope, entry in zip(items[::2], items[1::2], strict=False):
        key, _, value = entry.partition("\n")
        if scope in ("local", "worktree") and names_program(key, value):
            found.add(f"{key}={value}")
    return frozenset(found)


def planted_since_start(workspace: Path) -> list[str]:
    """Settings naming a program that the repository gained since the session started. kimi never runs
    them, but git run by hand would: worth telling the user."""
    try:
        location = find_repo(workspace.resolve(), workspace.resolve())
    except OSError:
        return []
    if location is None:
        return []
    return sorted(program_settings(location) - baseline(workspace).programs)


def baseline(workspace: Path) -> SessionBaseline:
    """The session-start record for a workspace (taken now if nothing recorded it yet, e.g. `kimi pack`)."""
    return _BASELINES.get(workspace.resolve()) or remember_session_start(workspace)


def open_repo(workspace: Path) -> RepoLocation | None:
    """The workspace's repository, or None outside git; UnsafeRepository if a link changed since the start."""
    workspace = workspace.resolve()
    known = baseline(workspace)
    location = find_repo(workspace, workspace)
    if location is None:
        return None
    foreign = _foreign_owner(location)
    if foreign:
        raise UnsafeRepository(foreign)
    new = sorted(location.links - known.links)
    if new:
        raise UnsafeRepository(
            f"refused to run git: the repository now has {'; '.join(new)}, which it did not have when the "
            "session started (a command may have planted it to make git read config from elsewhere). "
            "Check the .git folder; kimi trusts such links only when they were there at start."
        )
    foreign_repo = foreign_link(location)
    if foreign_repo:
        raise UnsafeRepository(foreign_repo)
    return git_pin.checked(location, known.pins)


def _foreign_owner(location: RepoLocation) -> str | None:
    """git's safe.directory rule, kept although kimi names the repository itself (GIT_DIR skips git's check):
    a repository owned by another user is refused unless the user's own config lists it."""
    me = os.geteuid()
    allowed = {me}
    if me == 0 and os.environ.get("SUDO_UID", "").isdigit():
        allowed.add(int(os.environ["SUDO_UID"]))
    owners = set()
    for path in (location.work_tree, location.git_dir, location.common_dir):
        try:
            owners.add(path.stat().st_uid)
        except OSError:
            continue
    if owners <= allowed:
        return None
    from kimi_cli.hostsafe.git.host import spawn

    listed: list[str] = []
    env = base_env()
    env.pop("GIT_CONFIG_NOSYSTEM", None)  # the administrator's list counts too, as it does for git
    for scope in ("--system", "--global"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = spawn(["git", "config", scope, "--get-all", "safe.directory"], env, "/", timeout=30)
            listed += [line.strip() for line in out.stdout.decode(errors="replace").splitlines()]
    if "*" in listed or str(location.work_tree) in listed or str(location.git_dir) in listed:
        return None
    return (
        f"refused to run git: the repository {location.work_tree} is owned by another user (uid "
        f"{', '.join(str(o) for o in sorted(owners - allowed))}), so its config could run that user's programs. "
        f"If you trust it: git config --global --add safe.directory {location.work_tree}"
    )


def _hooks_folder(location: RepoLocation) -> Path:
    """Where git would look for hooks: core.hooksPath from the repository's own config, else hooks/."""
    from kimi_cli.hostsafe.git.host import spawn

    env = base_env()
    env.update(GIT_DIR=str(location.git_dir), GIT_WORK_TREE=str(location.work_tree))
    env["GIT_CONFIG_PARAMETERS"] = config_parameters(HARDENING)
    out = spawn(["git", "config", "--show-scope", "--get-all", "core.hooksPath"], env, location.work_tree, timeout=30)
    lines = [ln.split("\t", 1) for ln in out.stdout.decode(errors="replace").splitlines() if "\t" in ln]
    paths = [value for scope, value in lines if scope != "command"]
    if paths and paths[-1]:
        return (location.work_tree / os.path.expanduser(paths[-1])).resolve()
    return location.common_dir / "hooks"


def _read_hooks(location: RepoLocation) -> tuple[Path | None, dict[str, tuple[bytes, int]]]:
    try:
        folder = _hooks_folder(location)
    except (OSError, subprocess.SubprocessError):
        return None, {}
    found: dict[str, tuple[bytes, int]] = {}
    try:
        entries = list(folder.iterdir()) if folder.is_dir() else []
    except OSError:
        entries = []
    for entry in entries:
        try:
            st = entry.stat()
            if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_HOOK_BYTES:
                found[entry.name] = (entry.read_bytes(), stat.S_IMODE(st.st_mode))
        except OSError:
            continue
    return folder, found


def active_hooks(workspace: Path) -> dict[str, bool]:
    """Executable commit hooks in the repository now -> whether each is exactly the one seen at start."""
    location = open_repo(workspace)
    if location is None:
        return {}
    start = baseline(workspace)
    _, now = _read_hooks(location)
    result = {}
    for name in HOOK_NAMES:
        current = now.get(name)
        if current is not None and current[1] & 0o111:
            result[name] = start.hooks.get(name) == current
    return result


def commit_hooks_dir(workspace: Path) -> Path:
    """A new private folder holding the hook files as they were at session start (caller removes it)."""
    from kimi_cli.util.paths import kimi_home

    parent = kimi_home() / "tmp"
    parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder = Path(tempfile.mkdtemp(prefix="hooks-", dir=parent))
    for name, (content, mode) in baseline(workspace).hooks.items():
        target = folder / name
        target.write_bytes(content)
        os.chmod(target, mode & 0o755)
    return folder
