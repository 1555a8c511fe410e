"""Whether a git dir outside the workspace belongs to it: git's own back-references, checked both ways.

A `.git` file or symlink that a workspace arrived with (a cloned or downloaded folder) can name any git dir on
the machine (`gitdir: /home/user/other-project/.git`), and a `.git/commondir` any common dir: the Git tool's
add, commit, switch and restore would then change another of the user's repositories. Such a link is
honoured only when the git dir it names says, in a file the workspace cannot write, that it belongs to this
work tree:
- a linked worktree (`git worktree add`): the git dir is `<common>/worktrees/<name>`, its `commondir` leads to
  `<common>`, and its `gitdir` file names this work tree's `.git`;
- any other git dir (a submodule's `<super>/.git/modules/<name>`, a `--separate-git-dir`): its config's
  `core.worktree` names this work tree. Git writes it for submodules; for a separate git dir the user sets it
  once (the refusal gives the command).
A `commondir` is honoured only in a linked worktree's git dir. A git dir inside the workspace is the
workspace's own (session_start links and host.py's overrides deal with what a command writes there).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from kimi_cli.hostsafe.git.hardening import HARDENING, base_env, config_parameters
from kimi_cli.hostsafe.git.location import RepoLocation, read_small
from kimi_cli.kernel.contain import inside

WHY = "a cloned or downloaded folder can aim kimi's git at another of your repositories this way"


def _link_file(path: Path) -> Path | None:
    """The folder a worktree's `gitdir` file names (relative to its own folder), or None."""
    try:
        raw = read_small(path).strip()
    except OSError:
        return None
    return (path.parent / raw).resolve() if raw else None


def core_worktree(git_dir: Path) -> Path | None:
    """`core.worktree` from the git dir's own config file (no includes), resolved as git does: relative to
    the git dir."""
    from kimi_cli.hostsafe.git.host import spawn

    env = base_env()
    env["GIT_CONFIG_PARAMETERS"] = config_parameters(HARDENING)
    config = git_dir / "config"
    try:
        out = spawn(["git", "config", "--file", str(config), "--get", "core.worktree"], env, "/", timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    value = out.stdout.decode(errors="surrogateescape").strip()
    if out.returncode != 0 or not value:
        return None
    return (git_dir / value).resolve()


def foreign_link(location: RepoLocation) -> str | None:
    """Why the repository's links lead to a repository that is not this work tree's, or None."""
    workspace = location.workspace or location.work_tree
    git_dir, common, work_tree = location.git_dir, location.common_dir, location.work_tree
    linked = common != git_dir
    if linked and not inside(common, workspace) and git_dir.parent != common / "worktrees":
        return (
            f"refused to run git: {git_dir}/commondir points at {common}, a repository outside the workspace: git "
            f"would use its branches, objects and config. Only a linked worktree's folder (<repository>/.git/"
            f"worktrees/<name>) has a commondir; {WHY}."
        )
    if not location.via or inside(git_dir, workspace):
        return None
    how = f"the .git {'file' if location.via == 'gitfile' else location.via} of {work_tree}"
    if linked:
        back = _link_file(git_dir / "gitdir")
        if back == work_tree / ".git":
            return None
        return (
            f"refused to run git: {how} points at {git_dir}, outside the workspace: a linked worktree of {common} "
            f"whose gitdir file names {back or 'nothing'}, not this folder, so git would change that checkout's "
            f"index and branch; {WHY}."
        )
    named = core_worktree(git_dir)
    if named == work_tree:
        return None
    if named is not None:
        return (
            f"refused to run git: {how} points at {git_dir}, outside the workspace, whose core.worktree names "
            f"{named}, not this folder (that is another checkout's repository); {WHY}."
        )
    return (
        f"refused to run git: {how} points at {git_dir}, a repository outside the workspace that does not name "
        f"this folder as its work tree; {WHY}. If it is this folder's own repository (a --separate-git-dir "
        f"layout), allow it with: git --git-dir={git_dir} config core.worktree {work_tree}"
    )
