"""Host git aimed at another of the user's repositories: by a `.git` link the workspace arrived with, and by a
`.git` swapped while kimi runs git.

The attacks:
- A `.git` FILE present at session start (`gitdir: /home/user/other-project/.git`, in a cloned or downloaded
  workspace) was accepted like a worktree link: the Git tool's add, commit, switch and restore then worked on
  the other project's index and branches. So were a `.git` symlink and a `.git/commondir` leading there.
- On landlock a command can swap `.git` for a symlink to another repository (renameat2 RENAME_EXCHANGE) or
  for a `.git` file, between open_repo's checks and the spawn of git: GIT_DIR, and git_confine's Landlock write
  grant (computed with realpath), then followed the swap into the other repository.

Each attack sits beside the legitimate layout it must not break: a real `git worktree` checkout, a submodule
checkout, a `--separate-git-dir` layout the user opted in to (core.worktree in the git dir names the
workspace), a workspace that is a subfolder of a repository, a plain repository. "Nothing changed" is
measured on the other repository itself: its index, HEAD, refs, object count and config; every program its
config or hooks name only appends to a marker file.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_cli.hostsafe.git import confine as git_confine
from kimi_cli.hostsafe.git.location import UnsafeRepository
from kimi_cli.hostsafe.git.repo_guard import open_repo, remember_session_start
from kimi_cli.hostsafe.git.workspace import workspace_git
from kimi_cli.session.undo.shadow import CheckpointError, ShadowRepo
from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.git_tool import Git, GitIdentity
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.workspace import Workspace

from scripted_server import ScriptedModelServer
from support import git, run_kimi, tool_call, tool_results

IDENTITY = GitIdentity(name="Kimi Agent", email="kimi@example.com")
CHANGING = [  # every Git command that writes the index, refs or the tree
    {"command": "status"},
    {"command": "add", "all": True},
    {"command": "commit", "message": "kimi was here"},
    {"command": "branch", "name": "kimi-branch"},
    {"command": "switch", "name": "kimi-switch", "create": True},
    {"command": "restore", "paths": ["app.py"]},
]


def tool(root: Path, identity: GitIdentity = IDENTITY, **args: object) -> tuple[str, bool]:
    registry = ToolRegistry([Git(identity)])
    result = asyncio.run(registry.call("Git", json.dumps(args), ToolContext(workspace=Workspace(root))))
    return result.output, result.is_error


def ran(marks: Path) -> list[str]:
    return marks.read_text().split() if marks.exists() else []


def other_project(tmp_path: Path) -> tuple[Path, Path]:
    """Another repository of the user's, with a commit, a second branch, and programs in its config and
    hooks that only write a marker (so any run of its programs shows). (its .git, the marker file)"""
    other, marks = tmp_path / "other-project", tmp_path / "marks"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    (other / "secret.py").write_text("TOKEN = 'other project'\n")
    (other / "app.py").write_text("print('other')\n")
    git(other, "add", ".")
    git(other, "commit", "-q", "-m", "other's work")
    git(other, "branch", "other-feature")
    (other / "secret.py").write_text("TOKEN = 'uncommitted work in the other project'\n")  # the user's WIP
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    plant = bin_dir / "plant"
    plant.write_text(f'#!/bin/sh\necho "other-$(basename "$0")" >> {marks}\ncat >/dev/null 2>&1\nexit 0\n')
    plant.chmod(0o755)
    git(other, "config", "core.fsmonitor", str(plant))
    for hook in ("pre-commit", "post-commit", "post-checkout", "reference-transaction", "post-index-change"):
        (other / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\necho hook-{hook} >> {marks}\n")
        (other / ".git" / "hooks" / hook).chmod(0o755)
    return other / ".git", marks


def fingerprint(git_dir: Path) -> dict[str, object]:
    """What a repository is: the index's bytes, HEAD, every ref, how many objects, its config."""

    def digest(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "-"

    refs = sorted((str(p.relative_to(git_dir)), p.read_text()) for p in (git_dir / "refs").rglob("*") if p.is_file())
    objects = sum(1 for p in (git_dir / "objects").rglob("*") if p.is_file())
    return {
        "index": digest(git_dir / "index"),
        "HEAD": (git_dir / "HEAD").read_text(),
        "refs": refs,
        "packed-refs": digest(git_dir / "packed-refs"),
        "objects": objects,
        "config": (git_dir / "config").read_text(),
        "worktrees": sorted(p.name for p in (git_dir / "worktrees").iterdir()) if (git_dir / "worktrees").is_dir()
        else [],
    }  # fmt: skip


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('downloaded')\n")
    (ws / "new.py").write_text("x = 1\n")
    return ws


def assert_every_command_refused(ws: Path, why: str) -> None:
    for args in CHANGING:
        out, err = tool(ws, **args)
        assert err and why in out, (args, out)


# --- 1. a `.git` link present at session start --------------------------------------------------------------


def test_a_gitfile_naming_another_repository_at_start_is_refused(tmp_path: Path) -> None:
    other, marks = other_project(tmp_path)
    ws = workspace(tmp_path)
    (ws / ".git").write_text(f"gitdir: {other}\n")  # what a cloned or downloaded workspace may carry
    before = fingerprint(other)
    remember_session_start(ws)
    with pytest.raises(UnsafeRepository, match="outside the workspace"):
        open_repo(ws)
    assert_every_command_refused(ws, "core.worktree")  # the message names the setting that allows it
    assert workspace_git(ws, ["add", "--all"]) is None  # the pack's and ci-repair's git refuse it too
    shadow = ShadowRepo(ws, home=tmp_path / "kimi-home")
    first = shadow.snapshot()  # checkpoints still work, without borrowing the other repository's objects
    (ws / "app.py").write_text("print('changed')\n")
    assert [c.path for c in shadow.changes(first, shadow.snapshot())] == ["app.py"]
    assert not (shadow.git_dir / "objects" / "info" / "alternates").exists()
    assert fingerprint(other) == before
    assert ran(marks) == []
    # The control: plain git in this workspace works on the other project's index.
    plain = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "add", "new.py"],
                   cwd=ws, env=plain, capture_output=True, check=True)  # fmt: skip
    assert fingerprint(other)["index"] != before["index"]


def test_a_git_symlink_naming_another_repository_at_start_is_refused(tmp_path: Path) -> None:
    other, marks = other_project(tmp_path)
    ws = workspace(tmp_path)
    (ws / ".git").symlink_to(other)
    before = fingerprint(other)
    remember_session_start(ws)
    assert_every_command_refused(ws, "outside the workspace")
    assert fingerprint(other) == before
    assert ran(marks) == []


def test_a_commondir_naming_another_repository_at_start_is_refused(tmp_path: Path) -> None:
    """A downloaded `.git` folder whose commondir leads to another repository: its refs and objects (and
    branches) would be the other project's. No real git layout has a commondir outside .git/worktrees."""
    other, marks = other_project(tmp_path)
    ws = workspace(tmp_path)
    git(ws, "init", "-q", "-b", "main")
    (ws / ".git" / "commondir").write_text(f"{other}\n")
    before = fingerprint(other)
    remember_session_start(ws)
    assert_every_command_refused(ws, "commondir")
    assert fingerprint(other) == before
    assert ran(marks) == []


def test_a_gitfile_naming_another_checkouts_worktree_entry_is_refused(tmp_path: Path) -> None:
    """The other project's linked worktree entry: its commondir leads back to the other project, but its
    gitdir file names the other checkout's .git, not this workspace's."""
    other, marks = other_project(tmp_path)
    quiet = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")  # the plants stay for kimi alone
    git(other.parent, *quiet, "worktree", "add", "-q", str(tmp_path / "other-wt"), "-b", "other-wt")
    ws = workspace(tmp_path)
    (ws / ".git").write_text(f"gitdir: {other / 'worktrees' / 'other-wt'}\n")
    before = fingerprint(other)
    remember_session_start(ws)
    assert_every_command_refused(ws, "worktree")
    assert fingerprint(other) == before
    assert ran(marks) == []


def test_a_gitfile_naming_another_checkouts_submodule_is_refused(tmp_path: Path) -> None:
    """The other project's submodule git dir: its core.worktree names the other project's checkout."""
    other, marks = other_project(tmp_path)
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    (lib / "lib.py").write_text("LIB = 1\n")
    git(lib, "add", "."), git(lib, "commit", "-q", "-m", "lib")
    quiet = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")  # the plants stay for kimi alone
    git(other.parent, *quiet, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    modules = other / "modules" / "vendor" / "lib"
    assert modules.is_dir()
    ws = workspace(tmp_path)
    (ws / ".git").write_text(f"gitdir: {modules}\n")
    before, sub_before = fingerprint(other), fingerprint(modules)
    remember_session_start(ws)
    assert_every_command_refused(ws, "core.worktree")
    assert fingerprint(other) == before and fingerprint(modules) == sub_before
    assert ran(marks) == []


def test_kimi_p_in_a_workspace_whose_gitfile_names_another_repository(
    tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    """End to end: the model's Git calls are refused with the reason; the other project is untouched."""
    other, marks = other_project(tmp_path)
    ws = workspace(tmp_path)
    (ws / ".git").write_text(f"gitdir: {other}\n")
    before = fingerprint(other)
    calls = [tool_call("Git", args, f"Git:{i}") for i, args in enumerate(CHANGING[:3])]
    server.add({"tool_calls": calls}, {"text": "done"})
    proc = run_kimi(["-p", "commit everything", "--yolo"], ws, env, server)
    assert proc.returncode == 0, proc.stderr
    results = tool_results(server, 1)
    assert len(results) == 3 and all("outside the workspace" in r for r in results), results
    assert fingerprint(other) == before
    assert ran(marks) == []


# --- 1. the legitimate layouts ----------------------------------------------------------------------------


def commit_flow(ws: Path, name: str) -> None:
    (ws / name).write_text("new\n")
    out, err = tool(ws, command="add", paths=[name])
    assert not err and "A  " in out and name in out, out
    out, err = tool(ws, command="commit", message=f"add {name}")
    assert not err and f"add {name}" in out, out


def test_a_real_worktree_checkout_works(tmp_path: Path, repo: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "feature")
    main_head = git(repo, "rev-parse", "main").strip()
    remember_session_start(wt)
    commit_flow(wt, "wt.txt")
    out, err = tool(wt, command="switch", name="feature-2", create=True)
    assert not err and "## feature-2" in out, out
    assert git(repo, "log", "-1", "--format=%s", "feature").strip() == "add wt.txt"
    assert git(repo, "rev-parse", "main").strip() == main_head  # the main checkout's branch is untouched
    assert git(repo, "status", "--porcelain") == ""


def test_a_real_submodule_checkout_works(tmp_path: Path, repo: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    (lib / "lib.py").write_text("LIB = 1\n")
    git(lib, "add", "."), git(lib, "commit", "-q", "-m", "lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    sub = repo / "vendor" / "lib"
    assert (sub / ".git").is_file()
    remember_session_start(sub)
    commit_flow(sub, "sub.txt")
    assert git(sub, "log", "-1", "--format=%s").strip() == "add sub.txt"
    assert "vendor/lib" in git(repo, "status", "--porcelain")  # the superproject sees the new submodule commit


def test_a_separate_git_dir_needs_the_users_core_worktree(tmp_path: Path) -> None:
    store, ws = tmp_path / "store.git", tmp_path / "ws"
    subprocess.run(["git", "init", "-q", "-b", "main", f"--separate-git-dir={store}", str(ws)], check=True)
    (ws / "f.txt").write_text("f\n")
    remember_session_start(ws)
    out, err = tool(ws, command="status")
    assert err and f"git --git-dir={store} config core.worktree {ws}" in out, out  # how to allow it
    git(tmp_path, f"--git-dir={store}", "config", "core.worktree", str(ws))  # the user's opt-in
    out, err = tool(ws, command="status")
    assert not err and "?? f.txt" in out, out
    commit_flow(ws, "g.txt")
    assert git(tmp_path, f"--git-dir={store}", "log", "-1", "--format=%s").strip() == "add g.txt"


def test_a_subfolder_of_a_repository_works_and_a_gitfile_written_there_later_is_refused(tmp_path: Path) -> None:
    """The user opened a subfolder of their repository: the Git tool works on it. A `.git` file a command
    writes there during the session (aimed at that repository as a whole, or at another one) is refused."""
    other, marks = other_project(tmp_path)
    outer = tmp_path / "outer"
    ws = outer / "sub"
    ws.mkdir(parents=True)
    git(outer, "init", "-q", "-b", "main")
    (outer / "top.py").write_text("TOP = 1\n")
    (ws / "lib.py").write_text("x = 1\n")
    git(outer, "add", "."), git(outer, "commit", "-q", "-m", "outer")
    remember_session_start(ws)
    commit_flow(ws, "sub.txt")
    assert git(outer, "log", "-1", "--format=%s").strip() == "add sub.txt"
    outer_before, before = fingerprint(outer / ".git"), fingerprint(other)
    for target in (outer / ".git", other):
        # With the outer repository's git dir and this subfolder as the work tree, `add --all` would stage
        # the deletion of everything outside the subfolder.
        (ws / ".git").write_text(f"gitdir: {target}\n")
        for args in CHANGING:
            out, err = tool(ws, **args)
            assert err and "session started" in out, (target, args, out)
    (ws / ".git").unlink()
    assert fingerprint(outer / ".git") == outer_before and fingerprint(other) == before
    assert ran(marks) == []
    out, err = tool(ws, command="status")
    assert not err and "## main" in out


# --- 2. `.git` swapped while kimi runs git ------------------------------------------------------------------

SWAPPER = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = (p.encode() for p in sys.argv[1:4])
n = 0
while not os.path.exists(stop):
    libc.renameat2(-100, a, -100, b, 2)  # RENAME_EXCHANGE: `a` is always one of the two, never missing
    n += 1
print(n)
"""
REWRITER = r"""
import os, sys
target, good, evil, stop = sys.argv[1:5]
tmp = os.path.join(os.path.dirname(target), ".swap", "tmp")
n = 0
while not os.path.exists(stop):
    for content in (evil, good):
        with open(tmp, "w") as fh:
            fh.write(content)
        os.replace(tmp, target)
        with open(target, "w") as fh:  # in place as well: truncated, then rewritten
            fh.write(content)
    n += 1
print(n)
"""


@contextlib.contextmanager
def racing(script: str, *args: str, stop: Path) -> Iterator[None]:
    """A separate process (a sandboxed command's powers: it writes inside the workspace) racing kimi."""
    proc = subprocess.Popen([sys.executable, "-c", script, *args, str(stop)], stdout=subprocess.PIPE, text=True)
    try:
        yield
    finally:
        stop.write_text("stop")
        out, _ = proc.communicate(timeout=30)
        assert int(out.strip() or 0) > 0  # it really raced


@pytest.fixture(params=["confined", "without Landlock"])
def confinement(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both layers on their own: the pinned git dir must hold where Landlock is missing too."""
    if request.param == "without Landlock":
        monkeypatch.setenv("KIMI_HOST_GIT_NO_LANDLOCK", "1")
    elif not git_confine.available():
        pytest.skip("no Landlock on this kernel")
    git_confine._abi.cache_clear()
    git_confine._available_with.cache_clear()
    yield request.param
    monkeypatch.delenv("KIMI_HOST_GIT_NO_LANDLOCK", raising=False)
    git_confine._abi.cache_clear()
    git_confine._available_with.cache_clear()


def race_calls(ws: Path, shadow: ShadowRepo, rounds: int) -> dict[str, int]:
    """Git status/add/commit and a checkpoint snapshot now and then; how many of each went through."""
    done = {"status": 0, "add": 0, "commit": 0, "snapshot": 0, "snapshot failed": 0}
    for i in range(rounds):
        (ws / "app.py").write_text(f"print({i})\n")
        step = ("status", "add", "commit")[i % 3]
        args: dict[str, object] = {"command": step}
        if step == "add":
            args["all"] = True
        if step == "commit":
            args["message"] = f"step {i}"
        out, err = tool(ws, **args)
        assert "Traceback" not in out, out
        done[step] += not err
        if i % 10 == 0:
            try:
                shadow.snapshot()
                done["snapshot"] += 1
            except CheckpointError:
                done["snapshot failed"] += 1
    return done


@pytest.mark.parametrize(
    ("swap", "start", "rounds"),
    [
        ("symlink", "repository at start", 200),
        ("gitfile", "repository at start", 60),
        ("symlink", "repository made during the session", 60),
    ],
)
def test_git_swapped_while_kimi_runs_git_never_reaches_another_repository(
    tmp_path: Path, confinement: str, swap: str, start: str, rounds: int
) -> None:
    other, marks = other_project(tmp_path)
    ws = workspace(tmp_path)
    (ws / ".gitignore").write_text("/.swap/\n")  # where the swapped-out `.git` sits: not worth snapshotting
    if start == "repository at start":
        git(ws, "init", "-q", "-b", "main")
        git(ws, "add", "."), git(ws, "commit", "-q", "-m", "start")
    remember_session_start(ws)
    if start != "repository at start":  # a sandboxed command runs `git init` after the session started
        git(ws, "init", "-q", "-b", "main")
        git(ws, "add", "."), git(ws, "commit", "-q", "-m", "start")
    own = ws / ".git"
    (ws / ".swap").mkdir()
    decoy = ws / ".swap" / "decoy"
    if swap == "symlink":
        decoy.symlink_to(other)
    else:
        decoy.write_text(f"gitdir: {other}\n")
    before = fingerprint(other)
    shadow = ShadowRepo(ws, home=tmp_path / "kimi-home")
    shadow.snapshot()
    with racing(SWAPPER, str(own), str(decoy), stop=tmp_path / "stop"):
        done = race_calls(ws, shadow, rounds)
    if not own.is_dir() or own.is_symlink():
        os.rename(decoy, ws / ".swap" / "tmp"), os.rename(own, decoy), os.rename(ws / ".swap" / "tmp", own)
    assert fingerprint(other) == before, done
    assert ran(marks) == []
    # Kimi kept working. A snapshot may fail while `.git` is swapped (the shadow reads the workspace's objects
    # through .git/objects as an alternate, by path); it never writes there, and works again after the race.
    assert done["status"] > 0, done
    commit_flow(ws, "after.txt")  # and works as before once the race is over
    assert git(ws, "log", "-1", "--format=%s").strip() == "add after.txt"
    first = shadow.snapshot()
    (ws / "app.py").write_text("print('after')\n")
    assert [c.path for c in shadow.changes(first, shadow.snapshot())] == ["app.py"]


def test_a_worktree_gitfile_rewritten_while_kimi_runs_git_never_reaches_another_repository(
    tmp_path: Path, repo: Path
) -> None:
    other, marks = other_project(tmp_path)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "feature")
    good = (wt / ".git").read_text()
    (wt / ".swap").mkdir()  # the rewriter's temp file: ignored, as in the test above
    (wt / ".gitignore").write_text("/.swap/\n")
    remember_session_start(wt)
    before = fingerprint(other)
    shadow = ShadowRepo(wt, home=tmp_path / "kimi-home")
    with racing(REWRITER, str(wt / ".git"), good, f"gitdir: {other}\n", stop=tmp_path / "stop"):
        done = race_calls(wt, shadow, 60)
    (wt / ".git").write_text(good)
    assert fingerprint(other) == before, done
    assert ran(marks) == []
    assert done["status"] > 0, done
    commit_flow(wt, "after.txt")
    assert git(repo, "log", "-1", "--format=%s", "feature").strip() == "add after.txt"
