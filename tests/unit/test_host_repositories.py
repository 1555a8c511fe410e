"""Which repository kimi's host git works on (kimi_cli.hostsafe.git.repo_guard, backlinks, state), in process
with the real git: discovery without running git, the links a repository has at session start and the ones
planted after it, git dirs outside the workspace that must name this work tree back, another user's
repository, program settings and commit hooks seen at start, and the work branch of a headless run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kimi_cli.errors import ConfigError
from kimi_cli.hostsafe.git import repo_guard
from kimi_cli.hostsafe.git.backlinks import core_worktree, foreign_link
from kimi_cli.hostsafe.git.location import UnsafeRepository
from kimi_cli.hostsafe.git.repo_guard import (
    active_hooks,
    commit_hooks_dir,
    find_repo,
    names_program,
    open_repo,
    planted_since_start,
    remember_session_start,
)
from kimi_cli.hostsafe.git.state import git_state, switch_to_work_branch

from support import plain_git


def make_repo(path: Path, *args: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    plain_git(path, "init", "-q", "-b", "main", *args)
    (path / "a.txt").write_text("a\n")
    plain_git(path, "add", "a.txt")
    plain_git(path, "commit", "-qm", "one")
    return path


def git_out(path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=path, capture_output=True, text=True, check=True).stdout.strip()


def test_discovery_finds_a_folder_a_gitfile_or_a_link_and_never_a_bare_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    found = find_repo(repo / "sub", repo)
    assert found is not None and (found.work_tree, found.git_dir, found.via, found.links) == (
        repo, repo / ".git", "", frozenset())  # fmt: skip
    (tmp_path / "empty").mkdir()
    assert find_repo(tmp_path / "empty") is None
    plain_git(tmp_path, "init", "-q", "--bare", "bare.git")
    assert find_repo(tmp_path / "bare.git") is None

    sep = tmp_path / "ws-sep"
    sep.mkdir()
    plain_git(sep, "init", "-q", "--separate-git-dir", str(tmp_path / "sep.git"))
    gitfile = find_repo(sep)
    assert gitfile is not None and gitfile.via == "gitfile" and gitfile.git_dir == tmp_path / "sep.git"
    assert gitfile.links == {f".git gitfile -> {tmp_path / 'sep.git'}"}

    linked = tmp_path / "ws-link"
    linked.mkdir()
    (linked / ".git").symlink_to(repo / ".git")
    via_link = find_repo(linked)
    assert via_link is not None and via_link.via == "symlink" and via_link.git_dir == repo / ".git"

    fake = tmp_path / "fake"
    (fake / ".git").mkdir(parents=True)  # no HEAD, objects or refs: not a git dir, so the search goes on
    assert find_repo(fake) is None
    (fake / ".git").rmdir()
    (fake / ".git").write_text("not a gitfile\n")
    assert find_repo(fake) is None
    os.unlink(fake / ".git")
    os.mkfifo(fake / ".git")
    assert find_repo(fake) is None


def test_a_repository_above_the_workspace_and_alternates_are_noted_as_links(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "pkg").mkdir()
    above = find_repo(repo / "pkg", repo / "pkg")
    assert above is not None and above.links == {f"repository above the workspace -> {repo / '.git'}"}
    other = make_repo(tmp_path / "other")
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"# borrowed\n{other / '.git' / 'objects'}\n")
    borrowed = find_repo(repo)
    assert borrowed is not None
    assert borrowed.links == {f"objects/info/alternates -> {other / '.git' / 'objects'}"}


def test_links_planted_after_the_start_refuse_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    remember_session_start(repo)
    location = open_repo(repo)
    assert location is not None and location.git_dir_id is not None
    other = make_repo(tmp_path / "other")
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{other / '.git' / 'objects'}\n")
    with pytest.raises(UnsafeRepository, match="which it did not have when the session started"):
        open_repo(repo)
    remember_session_start(repo)  # a new session takes the repository as it is now
    assert open_repo(repo) is not None


def test_a_git_dir_outside_must_name_this_work_tree_back(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    plain_git(ws, "init", "-q", "--separate-git-dir", str(tmp_path / "sep.git"))
    remember_session_start(ws)
    with pytest.raises(UnsafeRepository, match="does not name this folder as its work tree"):
        open_repo(ws)
    plain_git(ws, "--git-dir", str(tmp_path / "sep.git"), "config", "core.worktree", str(ws))
    assert core_worktree(tmp_path / "sep.git") == ws
    assert open_repo(ws) is not None
    plain_git(ws, "--git-dir", str(tmp_path / "sep.git"), "config", "core.worktree", str(tmp_path / "elsewhere"))
    with pytest.raises(UnsafeRepository, match=r"whose core\.worktree names"):
        open_repo(ws)
    assert core_worktree(tmp_path / "no-such.git") is None


def test_a_linked_worktree_is_honoured_only_when_its_gitdir_names_this_checkout(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main")
    plain_git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature")
    wt = tmp_path / "wt"
    location = find_repo(wt)
    assert location is not None and location.common_dir == main / ".git" and location.via == "gitfile"
    assert foreign_link(location) is None
    remember_session_start(wt)
    assert open_repo(wt) is not None
    (location.git_dir / "gitdir").write_text(str(tmp_path / "someone-else" / ".git") + "\n")
    with pytest.raises(UnsafeRepository, match="which it did not have when the session started"):
        open_repo(wt)
    remember_session_start(wt)  # even when it was so at the start: the worktree names another checkout
    with pytest.raises(UnsafeRepository, match="whose gitdir file names"):
        open_repo(wt)
    wt_links = find_repo(main)
    assert wt_links is not None and any(link.startswith("worktree wt -> ") for link in wt_links.links)


def test_a_commondir_outside_is_honoured_only_in_a_worktrees_folder(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws")
    other = make_repo(tmp_path / "other")
    (ws / ".git" / "commondir").write_text(str(other / ".git") + "\n")
    location = find_repo(ws)
    assert location is not None and location.common_dir == other / ".git"
    reason = foreign_link(location)
    assert reason is not None and "points at" in reason and "Only a linked worktree's folder" in reason


@pytest.mark.skipif(os.geteuid() != 0, reason="making a repository another user owns needs root")
def test_another_users_repository_is_refused_unless_safe_directory_lists_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "theirs")
    for top, dirs, files in os.walk(repo):
        for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
            os.lchown(name, 12345, 12345)
    remember_session_start(repo)
    with pytest.raises(UnsafeRepository, match=r"owned by another user \(uid 12345\)"):
        open_repo(repo)
    subprocess.run(["git", "config", "--global", "--add", "safe.directory", str(repo)], check=True)
    assert open_repo(repo) is not None


@pytest.mark.parametrize(
    ("key", "value", "runs"),
    [
        ("core.fsmonitor", "x", True),
        ("core.FSMonitor", "x", True),
        ("alias.st", "status", False),
        ("alias.st", " !rm -rf .", True),
        ("submodule.x.update", "!sh", True),
        ("diff.tool.textconv", "cat", True),
        ("user.name", "x", False),
        ("credential.helper", "store", True),
    ],
)
def test_which_settings_name_a_program(key: str, value: str, runs: bool) -> None:
    assert names_program(key, value) is runs


def test_program_settings_planted_since_the_start_are_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    plain_git(repo, "config", "core.pager", "less")
    remember_session_start(repo)
    assert planted_since_start(repo) == []
    plain_git(repo, "config", "core.fsmonitor", "touch /tmp/pwned")
    assert planted_since_start(repo) == ["core.fsmonitor=touch /tmp/pwned"]
    assert planted_since_start(tmp_path) == []  # no repository there


def test_commit_hooks_are_the_ones_seen_at_the_start(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    hooks = repo / ".git" / "hooks"
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "pre-commit").chmod(0o755)
    (hooks / "commit-msg").write_text("#!/bin/sh\nexit 0\n")  # not executable: git would not run it
    remember_session_start(repo)
    assert active_hooks(repo) == {"pre-commit": True}
    (hooks / "pre-commit").write_text("#!/bin/sh\ntouch /tmp/pwned\n")
    (hooks / "post-commit").write_text("#!/bin/sh\n")
    (hooks / "post-commit").chmod(0o700)
    assert active_hooks(repo) == {"pre-commit": False, "post-commit": False}
    kept = commit_hooks_dir(repo)
    try:
        assert (kept / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n" and not (kept / "post-commit").exists()
        assert (kept / "pre-commit").stat().st_mode & 0o777 == 0o755
    finally:
        for entry in kept.iterdir():
            entry.unlink()
        kept.rmdir()
    assert active_hooks(tmp_path) == {}


def test_a_hooks_path_in_the_repositorys_config_is_where_hooks_are_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "githooks").mkdir()
    (repo / "githooks" / "pre-commit").write_text("#!/bin/sh\n")
    (repo / "githooks" / "pre-commit").chmod(0o755)
    plain_git(repo, "config", "core.hooksPath", "githooks")
    start = remember_session_start(repo)
    assert start.hooks_dir == repo / "githooks" and list(start.hooks) == ["pre-commit"]


def test_the_git_state_at_the_start(tmp_path: Path) -> None:
    assert git_state(tmp_path) is None
    repo = make_repo(tmp_path / "repo")
    state = git_state(repo)
    assert state is not None and state["branch"] == "main" and not state["dirty"] and not state["detached"]
    assert state["head"] == git_out(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("changed\n")
    assert git_state(repo) == {**state, "dirty": True}
    plain_git(repo, "checkout", "-q", "--detach")
    detached = git_state(repo)
    assert detached is not None and detached["branch"] is None and detached["detached"]


def test_the_work_branch_is_made_once_then_reused_with_the_changes_along(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("work in progress\n")
    assert switch_to_work_branch(repo, "kimi/fix") == "created branch"
    assert (
        git_out(repo, "branch", "--show-current") == "kimi/fix" and (repo / "a.txt").read_text() == "work in progress\n"
    )
    plain_git(repo, "switch", "-q", "main")
    assert switch_to_work_branch(repo, "kimi/fix") == "switched to existing branch"
    with pytest.raises(ConfigError, match="not a valid branch name"):
        switch_to_work_branch(repo, "bad..name")
    with pytest.raises(ConfigError, match="is not a git repository"):
        switch_to_work_branch(_plain(tmp_path), "x")


def test_the_work_branch_of_a_refused_repository_is_a_clear_error(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    plain_git(ws, "init", "-q", "--separate-git-dir", str(tmp_path / "sep.git"))
    remember_session_start(ws)
    with pytest.raises(ConfigError, match="--branch x: refused to run git"):
        switch_to_work_branch(ws, "x")
    assert git_state(ws) is None


def test_the_baseline_is_taken_when_nothing_took_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fresh")  # as `kimi pack` finds it: no session recorded it
    assert repo_guard.baseline(repo).hooks_dir == repo / ".git" / "hooks"


def _plain(tmp_path: Path) -> Path:
    folder = tmp_path / "plain"
    folder.mkdir(exist_ok=True)
    return folder
