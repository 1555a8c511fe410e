"""kimi's own host programs (git, bwrap, rg, the pager) never come from a folder a sandboxed command can write.

A user working in a project has its virtualenv on PATH, often first (`source .venv/bin/activate`, direnv,
`uv run`). `.venv/bin` is inside the workspace, so any sandboxed command can put a `git` or a `bwrap` there.
Before the fix a plain PATH lookup then ran it on the host: every host git call (the Git tool, each step's
checkpoint, even gitpython's import-time `git version`), and the next session's `bwrap`, which is the
sandbox itself. Each planted program records its name in a folder no sandbox can write; each attack first
shows that a plain lookup WOULD pick the plant, then that kimi does not, beside the legitimate use.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import backends

from kimi_cli.hostsafe.git import confine as git_confine
from kimi_cli.hostsafe.git.repo_guard import remember_session_start
from kimi_cli.hostsafe.git.workspace import workspace_git
from kimi_cli.hostsafe.programs import host_which, trusted_path
from kimi_cli.session.undo.shadow import ShadowRepo
from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.git_tool import Git, GitIdentity
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.workspace import Workspace

from scripted_server import ScriptedModelServer
from support import git, run_kimi, tool_call, tool_results


def plant(folder: Path, name: str, marks: Path) -> Path:
    """An executable `name` that records itself in `marks`, then runs the real program (so a run that
    should not happen still 'works' and only the mark tells)."""
    real = shutil.which(name)
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(f'#!/bin/sh\necho "{name} $*" >> {marks}\nexec {real or "false"} "$@"\n')
    script.chmod(0o755)
    return script


def ran(marks: Path) -> list[str]:
    return marks.read_text().splitlines() if marks.exists() else []


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, Path]]:
    """A repository whose .venv/bin is first on PATH (an activated virtualenv); (ws, venv bin, marks)."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "app.py").write_text("print('hi')\n")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "initial")
    venv_bin = ws / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (ws / ".gitignore").write_text(".venv/\n")
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}{os.environ['PATH']}")
    yield ws, venv_bin, outside / "marks"


@pytest.fixture(params=["confined", "without Landlock"])
def confinement(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Host git with its Landlock domain, and as on a kernel without Landlock (the overrides alone)."""
    if request.param == "without Landlock":
        monkeypatch.setenv("KIMI_HOST_GIT_NO_LANDLOCK", "1")
    git_confine._abi.cache_clear()
    yield request.param
    monkeypatch.delenv("KIMI_HOST_GIT_NO_LANDLOCK", raising=False)
    git_confine._abi.cache_clear()


def git_tool(ws: Path, **args: object) -> tuple[str, bool]:
    registry = ToolRegistry([Git(GitIdentity(name="Kimi", email="k@example.com"))])
    result = asyncio.run(registry.call("Git", json.dumps(args), ToolContext(workspace=Workspace(ws))))
    return result.output, result.is_error


# --- git --------------------------------------------------------------------------------------------------


def test_a_git_planted_in_the_workspace_venv_never_runs_on_the_host(
    project: tuple[Path, Path, Path], tmp_path: Path, confinement: str
) -> None:
    ws, venv_bin, marks = project
    plant(venv_bin, "git", marks)
    subprocess.run(["git", "--version"], capture_output=True, check=True)  # a plain lookup picks the plant
    assert ran(marks) == ["git --version"]
    marks.unlink()

    remember_session_start(ws)
    (ws / "app.py").write_text("print('changed')\n")
    out, err = git_tool(ws, command="status")
    assert not err and " M app.py" in out  # the Git tool works, with the real git
    out, err = git_tool(ws, command="diff")
    assert not err and "+print('changed')" in out
    listing = workspace_git(ws, ["ls-files"])
    assert listing is not None and b"app.py" in listing.stdout
    shadow = ShadowRepo(ws, home=tmp_path / "kimi-home")
    first = shadow.snapshot()
    (ws / "new.py").write_text("x = 1\n")
    assert [c.path for c in shadow.changes(first, shadow.snapshot())] == ["new.py"]  # checkpoints work
    assert ran(marks) == []


def test_an_allowed_hook_commit_runs_the_real_git_but_keeps_the_users_path_for_the_hook(
    project: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, venv_bin, marks = project
    monkeypatch.setenv("KIMI_API_KEY", "sk-test-SECRET-hooks")
    plant(venv_bin, "git", marks)
    tool_in_venv = venv_bin / "lint-tool"  # what a project's pre-commit hook runs: found on the user's PATH
    tool_in_venv.write_text(f'#!/bin/sh\necho "lint-tool key=${{KIMI_API_KEY:-none}}" >> {marks}.hook\n')
    tool_in_venv.chmod(0o755)
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nlint-tool\n")
    hook.chmod(0o755)
    remember_session_start(ws)
    (ws / "app.py").write_text("print('changed')\n")
    registry = ToolRegistry([Git(GitIdentity(name="Kimi", email="k@example.com", allow_hooks=True))])
    ctx = ToolContext(workspace=Workspace(ws))
    for args in ({"command": "add", "paths": ["app.py"]}, {"command": "commit", "message": "change"}):
        result = asyncio.run(registry.call("Git", json.dumps(args), ctx))
        assert not result.is_error, result.output
    # The allowed hook ran its project tool, without kimi's API key (git never needs it; project code must
    # not get it).
    assert Path(f"{marks}.hook").read_text() == "lint-tool key=none\n"
    assert ran(marks) == []  # but git itself was never the planted one


# --- the sandbox itself -----------------------------------------------------------------------------------


@pytest.mark.skipif("bwrap" not in backends(), reason="bwrap is not among this run's backends")
def test_a_bwrap_planted_in_the_workspace_venv_is_never_the_sandbox(
    project: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    from kimi_cli.sandbox.backends.bwrap import BwrapSandbox, bwrap_works
    from kimi_cli.sandbox.policy import build_policy

    ws, venv_bin, marks = project
    plant(venv_bin, "bwrap", marks)
    assert shutil.which("bwrap") == str(venv_bin / "bwrap")  # a plain lookup picks the plant
    hello = venv_bin / "hello"  # a project tool, found by name inside the sandbox as before
    hello.write_text("#!/bin/sh\necho hello from the venv\n")
    hello.chmod(0o755)
    private_tmp = tmp_path / "private-tmp"
    private_tmp.mkdir()
    policy = build_policy(ws, private_tmp)
    works, why = bwrap_works(policy)
    assert works, why
    sandbox = BwrapSandbox(policy, 30_000)
    result = asyncio.run(sandbox.run("hello && cat /proc/self/status | grep -c NoNewPrivs", 30))
    assert result.exit_code == 0 and "hello from the venv" in result.output, result.output
    assert ran(marks) == []


def test_rg_and_the_pager_are_never_taken_from_the_workspace(
    project: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from kimi_cli.frontends.terminal.pager import pager_command
    from kimi_cli.tools.ripgrep import find_rg

    ws, venv_bin, marks = project
    plant(venv_bin, "rg", marks)
    plant(venv_bin, "less", marks)
    elsewhere = tmp_path / "interpreter" / "bin"  # kimi installed without the ripgrep wheel's rg beside it
    elsewhere.mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(elsewhere / "python3"))
    assert shutil.which("rg") == str(venv_bin / "rg")  # a plain lookup picks the plant
    monkeypatch.delenv("KIMI_PAGER", raising=False)
    monkeypatch.delenv("PAGER", raising=False)
    remember_session_start(ws)  # a session has started here: its workspace is known to every lookup
    rg = find_rg((ws,))
    assert not rg.startswith(str(ws)) and os.path.basename(rg) == "rg"
    pager = pager_command()
    assert pager == [] or not pager[0].startswith(str(ws))


def test_relative_and_workspace_path_entries_are_dropped_and_the_rest_kept(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    link = tmp_path / "looks-outside"
    link.symlink_to(ws / "bin")  # a PATH entry outside that leads back in
    path = os.pathsep.join(["", ".", "bin", str(ws / "bin"), str(link), "/usr/local/bin", "/usr/bin", "/bin"])
    assert trusted_path(path, (ws,)).split(os.pathsep) == ["/usr/local/bin", "/usr/bin", "/bin"]
    assert host_which("sh", (ws,), path) in ("/usr/local/bin/sh", "/usr/bin/sh", "/bin/sh")


def test_a_path_entry_that_only_passes_through_the_workspace_is_dropped(tmp_path: Path) -> None:
    """`ws/bin -> /usr/bin` resolves outside at the lookup, but a command can point the link at its own
    folder before kimi runs what it found (the sandbox itself, next time): a link met on the way counts
    as much as where it ends."""
    ws, outside, planted = tmp_path / "ws", tmp_path / "outside", tmp_path / "ws" / "planted"
    planted.mkdir(parents=True)
    outside.mkdir()
    real_dir = os.path.dirname(os.path.realpath(shutil.which("sh") or "/bin/sh"))
    (ws / "bin").symlink_to(real_dir)  # inside the workspace, ending outside
    (outside / "via").symlink_to(ws / "bin")  # outside, through the workspace, ending outside
    (ws / "rel").symlink_to("../outside")  # relative, through the workspace
    path = os.pathsep.join([str(ws / "bin"), str(outside / "via"), str(ws / "rel" / "x"), real_dir])
    assert trusted_path(path, (ws,)).split(os.pathsep) == [real_dir]
    found = host_which("sh", (ws,), path)
    assert found == os.path.join(real_dir, "sh")
    plant(planted, "sh", tmp_path / "marks")
    (ws / "bin").unlink()
    (ws / "bin").symlink_to(planted)  # the command retargets the link after kimi looked
    assert found is not None and subprocess.run([found, "-c", "true"]).returncode == 0
    assert ran(tmp_path / "marks") == []
    # The legitimate case beside it: a link wholly outside any writable folder is followed and kept.
    (outside / "tools").symlink_to(real_dir)
    assert trusted_path(str(outside / "tools"), (ws,)) == str(outside / "tools")
    assert host_which("sh", (ws,), str(outside / "tools")) == str(outside / "tools" / "sh")


# --- end to end: a session plants, the same and the next session run nothing of it -------------------------


def test_kimi_p_never_runs_the_git_or_bwrap_a_command_planted_in_the_venv(
    project: tuple[Path, Path, Path], home: Path, env: dict, server: ScriptedModelServer
) -> None:
    ws, venv_bin, marks = project
    env = {**env, "PATH": f"{venv_bin}{os.pathsep}{env['PATH']}"}
    planting = " && ".join(
        f"printf '#!/bin/sh\\necho {name} >> {marks}\\nexec {shutil.which(name) or 'false'} \"$@\"\\n' "
        f"> .venv/bin/{name} && chmod +x .venv/bin/{name}"
        for name in ("git", "bwrap")
    )
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": planting + " && echo planted"}, "Shell:1")]},
        {"tool_calls": [tool_call("Git", {"command": "status"}, "Git:2")]},
        {"tool_calls": [tool_call("WriteFile", {"path": "new.py", "content": "x = 1\n"}, "WriteFile:3")]},
        {"text": "done"},
        # the next session in the same folder
        {"tool_calls": [tool_call("Shell", {"command": "echo second session"}, "Shell:4")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "plant"], ws, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "planted" in tool_results(server, 1)[0]
    assert "## main" in tool_results(server, 2)[-1]  # the real git answered
    assert (venv_bin / "git").exists() and (venv_bin / "bwrap").exists()
    proc = run_kimi(["-p", "again"], ws, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "second session" in tool_results(server, 5)[-1]
    assert ran(marks) == []
