"""The guard that puts .git and .kimi back on landlock, attacked through what it walks.

The guard runs on the host, with the user's rights, over trees a command shaped. Unguarded:
- a folder 1,500 deep in .git/hooks made its recursive walk raise RecursionError: every later Shell call
  failed, nothing was put back, and the planted .git/hooks/pre-commit ran at the user's next `git commit`;
- its temp file was `.NAME.<kimi's pid>.kimi-guard`: a command that made that name first (kimi's pid is
  its spawner's parent) stopped every repair of .git/config, silently;
- as a non-root user, `chmod 555 .git/hooks` (or .git) stopped the unlink of a planted hook;
- an interactive rebase's todo list (`exec` lines run at `git rebase --continue`) was not guarded.
Each attack ends with the user's own `git commit` on the host: the planted hook must not run. bwrap and
Docker mount .git read-only, so there the plant fails at once; the same test runs on every backend.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, backends, make_rig

from support import git

HOOK = "printf '#!/bin/sh\\necho ran >> {marks}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit"


def _commit_as_the_user(ws: Path) -> None:
    """What the user does after the session, in their own terminal: git with hooks on."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "u", "GIT_AUTHOR_EMAIL": "u@x", "GIT_COMMITTER_NAME": "u",
           "GIT_COMMITTER_EMAIL": "u@x"}  # fmt: skip
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "by the user"], cwd=ws, env=env,
                   capture_output=True, timeout=60)  # fmt: skip


def _no_hook_ran(rig: Rig, marks: Path) -> None:
    """The user commits in their own terminal while the session goes on (the guard ran after the command)."""
    _commit_as_the_user(rig.ws)
    assert not marks.exists(), marks.read_text()
    assert not (rig.ws / ".git" / "hooks" / "pre-commit").exists()


def test_a_folder_too_deep_to_walk_does_not_stop_the_repair(rig: Rig, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    deep = "/".join(["d"] * 1500)
    result = rig.run(f"{HOOK.format(marks=marks)}; mkdir -p .git/hooks/{deep} .git/info/{deep}; echo planted")
    assert result.output  # the call returns: the guard did not raise
    assert not (rig.ws / ".git" / "hooks" / "d").exists() and not (rig.ws / ".git" / "info" / "d").exists()
    legit = rig.run(f"mkdir -p src/{deep} && echo ok > src/{deep}/f && echo fine")
    assert "fine" in legit.output and (rig.ws / "src" / deep / "f").exists()  # the workspace is the user's
    _no_hook_ran(rig, marks)
    subprocess.run(["rm", "-rf", str(rig.ws / "src")], check=True)  # pytest's own cleanup would recurse


def test_a_temp_name_made_in_advance_does_not_stop_the_repair(rig: Rig, tmp_path: Path) -> None:
    """The old temp name held kimi's pid: here that is this process (the rig runs in it)."""
    marks = tmp_path / "marks"
    config = (rig.ws / ".git" / "config").read_bytes()
    squat = "; ".join(f"mkdir -p .git/.{n}.{os.getpid()}.kimi-guard" for n in ("config", "pre-commit"))
    rig.run(
        f"{squat}; printf '[core]\\n\\tfsmonitor = echo ran >> {marks}; false\\n' >> .git/config;"
        f" {HOOK.format(marks=marks)}"
    )
    assert (rig.ws / ".git" / "config").read_bytes() == config
    git(rig.ws, "status")  # git on the host reads the config: no fsmonitor of the command's
    assert not marks.exists()
    _no_hook_ran(rig, marks)


def test_a_read_only_git_folder_does_not_stop_the_repair(rig: Rig, tmp_path: Path) -> None:
    """Bites as a non-root user (root's DAC override made the unlink work anyway): the CI run as kimi-ci."""
    marks = tmp_path / "marks"
    config = (rig.ws / ".git" / "config").read_bytes()
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in (rig.ws / ".git", rig.ws / ".git" / "hooks")}
    rig.run(f"{HOOK.format(marks=marks)}; echo '[core] fsmonitor = true' >> .git/config;"
            " chmod 555 .git/hooks; chmod 555 .git; chmod 555 .")  # fmt: skip
    assert (rig.ws / ".git" / "config").read_bytes() == config
    assert {p: stat.S_IMODE(p.stat().st_mode) for p in modes} == modes or rig.backend != "landlock"
    assert rig.run("echo fine > ok.txt && cat ok.txt").output.startswith("exit code: 0")
    _no_hook_ran(rig, marks)


@pytest.mark.parametrize("backend", backends())
def test_a_rebase_todo_list_cannot_be_planted(backend: str, tmp_path: Path) -> None:
    """`git status` would say an interactive rebase is in progress; `git rebase --continue` runs its exec
    lines. kimi's Git tool never rebases, so the folder must not appear."""
    rig, _ = make_rig(tmp_path, backend, prepare=lambda ws: git(ws, "commit", "-q", "--allow-empty", "-m", "one"))
    marks = tmp_path / "marks"
    try:
        head = git(rig.ws, "rev-parse", "HEAD")
        rig.run(
            "mkdir -p .git/rebase-merge && cd .git/rebase-merge && echo refs/heads/main > head-name &&"
            f" echo {head} > onto && echo {head} > orig-head && touch interactive && echo 1 > msgnum &&"
            f" echo 1 > end && printf 'exec echo ran >> {marks}\\n' > git-rebase-todo; echo planted"
        )
        assert not (rig.ws / ".git" / "rebase-merge").exists()
        subprocess.run(["git", "rebase", "--continue"], cwd=rig.ws, capture_output=True, timeout=60)
        assert not marks.exists()
        if backend != "docker":  # the Docker test image has no git
            legit = rig.run("git status --short && git log --oneline | head -1")
            assert legit.output.startswith("exit code: 0") and "one" in legit.output, legit.output
    finally:
        rig.close()


def _with_submodules(tmp_path: Path) -> Callable[[Path], None]:
    """A repository with an initialized submodule `sub` and an uninitialized one `later`."""

    def prepare(ws: Path) -> None:
        for name in ("lib", "lib2"):
            lib = tmp_path / name
            lib.mkdir()
            git(lib, "init", "-q")
            git(lib, "commit", "-q", "--allow-empty", "-m", name)
        git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(tmp_path / "lib"), "sub")
        git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(tmp_path / "lib2"), "later")
        git(ws, "commit", "-q", "-m", "subs")
        git(ws, "submodule", "deinit", "-q", "later")  # listed, not checked out: no later/.git

    return prepare


PLANT = (
    "mkdir -p evil && git init -q --bare evil/g.git && printf '#!/bin/sh\\necho ran >> {marks}\\n' > evil/fsm &&"
    " chmod +x evil/fsm && git -C evil/g.git config core.fsmonitor $PWD/evil/fsm &&"
    " git -C evil/g.git config core.bare false && git -C evil/g.git config core.worktree $PWD/{sub} &&"
    " echo 'gitdir: ../evil/g.git' > {sub}/.git; echo planted"
)


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])  # the test image has no git
def test_a_submodules_gitdir_pointer_cannot_be_turned_to_a_planted_repository(backend: str, tmp_path: Path) -> None:
    """`sub/.git` is a work-tree file on every backend. Pointed at a repository the command made, the user's
    own `git status` at the top ran that repository's core.fsmonitor on the host (it checks each submodule
    with a git of its own). The pointers the repository knew at session start are guarded now."""
    rig, _ = make_rig(tmp_path, backend, prepare=_with_submodules(tmp_path))
    marks = tmp_path / "marks"
    try:
        pointer = (rig.ws / "sub" / ".git").read_text()
        result = rig.run(PLANT.format(marks=marks, sub="sub") + "; " + PLANT.format(marks=marks, sub="later"))
        assert "planted" in result.output, result.output
        assert (rig.ws / "sub" / ".git").read_text() == pointer and not (rig.ws / "later" / ".git").exists()
        git(rig.ws, "status")  # the user's git, in their terminal (the Git tool is kimi's own)
        subprocess.run(["git", "status"], cwd=rig.ws, capture_output=True, timeout=60)
        assert not marks.exists(), marks.read_text()
        legit = rig.run("echo change > sub/file.txt && git -C sub status --short && git status --short")
        assert legit.output.startswith("exit code: 0") and "file.txt" in legit.output, legit.output
    finally:
        rig.close()
