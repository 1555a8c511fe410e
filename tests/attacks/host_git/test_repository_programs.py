"""Host git never runs what a repository plants: each attack beside the legitimate use it must not break.

Every planted program only appends its name to a marker file in a folder the sandbox cannot write, so a
marker proves it ran on the host. Each attack first shows that plain git WOULD run it (the plant is real),
then that kimi's path does not.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
from sandbox_fixtures import backends, local_shell

from kimi_cli.hostsafe.git import confine as git_confine
from kimi_cli.hostsafe.git.host import run_git
from kimi_cli.hostsafe.git.location import UnsafeRepository
from kimi_cli.hostsafe.git.repo_guard import find_repo, open_repo, remember_session_start
from kimi_cli.session.undo.shadow import ShadowRepo
from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.git_tool import Git, GitIdentity
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.shell import Shell
from kimi_cli.tools.workspace import Workspace

from scripted_server import ScriptedModelServer
from support import git, plain_git, ran, run_kimi, tool_call, tool_results

IDENTITY = GitIdentity(name="Kimi Agent", email="kimi@example.com")
GIT_BACKENDS = [b for b in backends() if b in ("bwrap", "landlock")]


def tool(root: Path, identity: GitIdentity = IDENTITY, **args: object) -> tuple[str, bool]:
    registry = ToolRegistry([Git(identity)])
    result = asyncio.run(registry.call("Git", json.dumps(args), ToolContext(workspace=Workspace(root))))
    return result.output, result.is_error


def marker_script(folder: Path, marks: Path, name: str) -> Path:
    """An executable that records `name` in `marks` and passes stdin through (so filters still 'work')."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"plant-{name}"
    script.write_text(f'#!/bin/sh\necho "{name}" >> {marks}\ncat\n')
    script.chmod(0o755)
    return script


def sandboxed(shell: Shell, ws: Path, command: str) -> str:
    params = Shell.Params.model_validate({"command": command})
    result = asyncio.run(shell.run(params, ToolContext(workspace=Workspace(ws))))
    return result.output


FSMONITOR_PLANT = (
    "git init -q . && printf '#!/bin/sh\\necho fsmonitor >> {marks}\\n' > .fsm && chmod +x .fsm && "
    "git config core.fsmonitor $PWD/.fsm && echo planted"
)


# --- the Git tool after a sandboxed command planted an fsmonitor ------------------------------------------


@pytest.mark.parametrize("backend", GIT_BACKENDS)
def test_fsmonitor_planted_by_git_init_in_a_non_repo_workspace_never_runs(tmp_path: Path, backend: str) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir(), outside.mkdir()
    marks = outside / "marks"
    (ws / "app.py").write_text("print('hi')\n")
    remember_session_start(ws)  # the session starts in a folder that is not a repository
    shell = local_shell(tmp_path, ws, backend)
    assert "planted" in sandboxed(shell, ws, FSMONITOR_PLANT.format(marks=marks))

    out, err = tool(ws, command="status")
    assert not err and "?? app.py" in out  # the Git tool works on the new repository
    assert ran(marks) == []
    plain_git(ws, "status")
    assert ran(marks) == []  # and the user's own git neither: the sandbox took the setting out (command_guard.py)


@pytest.mark.parametrize("backend", GIT_BACKENDS)
def test_fsmonitor_planted_in_a_subfolder_of_a_repository_never_runs(tmp_path: Path, backend: str) -> None:
    outer, outside = tmp_path / "outer", tmp_path / "outside"
    ws = outer / "sub"
    ws.mkdir(parents=True), outside.mkdir()
    marks = outside / "marks"
    git(outer, "init", "-q", "-b", "main")
    (ws / "lib.py").write_text("x = 1\n")
    git(outer, "add", "."), git(outer, "commit", "-q", "-m", "outer")
    remember_session_start(ws)
    shell = local_shell(tmp_path, ws, backend)
    assert "planted" in sandboxed(shell, ws, FSMONITOR_PLANT.format(marks=marks))

    out, err = tool(ws, command="status")
    assert not err and "?? lib.py" in out
    assert ran(marks) == []
    plain_git(ws, "status")
    assert ran(marks) == []


def test_legit_subfolder_workspace_uses_the_outer_repository(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    ws = outer / "sub"
    ws.mkdir(parents=True)
    git(outer, "init", "-q", "-b", "main")
    (ws / "lib.py").write_text("x = 1\n")
    git(outer, "add", "."), git(outer, "commit", "-q", "-m", "outer")
    remember_session_start(ws)
    (ws / "lib.py").write_text("x = 2\n")
    out, err = tool(ws, command="diff", paths=["lib.py"])
    assert not err and "+x = 2" in out


def _evil_common_dir(ws: Path, marks: Path) -> Path:
    """A folder that passes for a git common dir, whose config sets core.fsmonitor."""
    evil = ws / "evil-common"
    for sub in ("objects", "refs/heads"):
        (evil / sub).mkdir(parents=True, exist_ok=True)
    script = marker_script(ws / "bin", marks, "fsmonitor")
    (evil / "config").write_text(f"[core]\n\trepositoryformatversion = 0\n\tfsmonitor = {script}\n")
    return evil


def test_commondir_redirected_after_the_start_is_refused_and_runs_nothing(tmp_path: Path, repo: Path) -> None:
    marks = tmp_path / "marks"
    remember_session_start(repo)
    _evil_common_dir(repo, marks)
    (repo / ".git" / "commondir").write_text("../evil-common\n")  # what a landlock command could write

    out, err = tool(repo, command="status")
    assert err and "commondir" in out and "session started" in out
    assert ran(marks) == []
    # Even with the link check out of the way, the overrides hold: git reads the evil config, runs nothing.
    location = find_repo(repo)
    assert location is not None and run_git(["status"], repo, location).returncode == 0
    assert ran(marks) == []
    plain_git(repo, "status")
    assert "fsmonitor" in ran(marks)


@pytest.mark.skipif("landlock" not in GIT_BACKENDS, reason="landlock backend not under test")
def test_commondir_written_by_a_landlock_command_is_refused(tmp_path: Path, repo: Path) -> None:
    marks = tmp_path / "outside" / "marks"
    marks.parent.mkdir()
    remember_session_start(repo)
    shell = local_shell(tmp_path, repo, "landlock")
    script = (
        "mkdir -p evil/objects evil/refs/heads && "
        f"printf '#!/bin/sh\\necho fsmonitor >> {marks}\\n' > .fsm && chmod +x .fsm && "
        "printf '[core]\\n\\tfsmonitor = %s/.fsm\\n' \"$PWD\" > evil/config && "
        "echo ../evil > .git/commondir; echo done"
    )
    sandboxed(shell, repo, script)
    if not (repo / ".git" / "commondir").exists():
        pytest.skip("the landlock backend now keeps .git/commondir from being written")
    out, err = tool(repo, command="status")
    assert err and "commondir" in out
    assert ran(marks) == []


def test_links_present_at_session_start_are_accepted(tmp_path: Path, repo: Path) -> None:
    """A linked worktree: its .git file and commondir point outside the workspace from the start."""
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "feature")
    remember_session_start(wt)
    location = open_repo(wt)
    assert location is not None and location.common_dir == (repo / ".git").resolve()
    (wt / "calc.py").write_text("changed\n")
    out, err = tool(wt, command="status")
    assert not err and "## feature" in out and " M calc.py" in out


def test_alternates_added_during_the_session_are_refused(tmp_path: Path, repo: Path) -> None:
    remember_session_start(repo)
    elsewhere = tmp_path / "other-objects"
    elsewhere.mkdir()
    (repo / ".git" / "objects" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{elsewhere}\n")
    with pytest.raises(UnsafeRepository, match="alternates"):
        open_repo(repo)


# --- checkpoints: a nested repository's fsmonitor ---------------------------------------------------------


def test_nested_repository_fsmonitor_does_not_run_during_a_checkpoint_snapshot(tmp_path: Path, repo: Path) -> None:
    marks = tmp_path / "marks"
    nested = repo / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q", "-b", "main")
    (nested / "x.txt").write_text("x\n")
    git(nested, "add", "."), git(nested, "commit", "-q", "-m", "nested")
    script = marker_script(tmp_path / "bin", marks, "fsmonitor")
    git(nested, "config", "core.fsmonitor", str(script))
    (nested / "x.txt").write_text("changed\n")
    shadow = ShadowRepo(repo, home=tmp_path / "kimi-home")
    first = shadow.snapshot()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    second = shadow.snapshot()
    assert [c.path for c in shadow.changes(first, second)] == ["calc.py"]  # snapshots still work
    assert ran(marks) == []
    # Control: a shadow repository of the same shape, with plain git, runs the nested fsmonitor.
    control = tmp_path / "control.git"
    subprocess.run(["git", "init", "-q", "--bare", str(control)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_DIR=str(control), GIT_WORK_TREE=str(repo), GIT_INDEX_FILE=str(control / "index"))
    for _ in range(2):  # the second add looks inside the gitlink the first one recorded
        subprocess.run(["git", "add", "-A", "."], cwd=repo, env=env, capture_output=True)
    assert "fsmonitor" in ran(marks)


# --- hooks: a racing writer, and allow_hooks ----------------------------------------------------------------


def test_racing_writer_of_core_hooks_path_never_gets_a_hook_run(tmp_path: Path, repo: Path) -> None:
    marks = tmp_path / "marks"
    hooks = tmp_path / "evil-hooks"
    for name in ("pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change"):
        marker_script(hooks, marks, name).rename(hooks / name)
    remember_session_start(repo)
    config = repo / ".git" / "config"
    clean = config.read_text()
    evil = clean + f"[core]\n\thooksPath = {hooks}\n"
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            config.write_text(evil)
            config.write_text(clean)
            config.write_text(evil)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        commits = 0
        for i in range(8):
            (repo / f"f{i}.txt").write_text(f"{i}\n")
            tool(repo, command="add", paths=[f"f{i}.txt"])
            _out, err = tool(repo, command="commit", message=f"commit {i}")
            commits += not err
    finally:
        stop.set()
        thread.join()
    config.write_text(evil)
    assert ran(marks) == []
    assert commits >= 1  # commits still land (some may be refused while the evil hooks are visible)
    plain_git(repo, "commit", "--allow-empty", "-m", "control")
    assert "pre-commit" in ran(marks)


def test_allow_hooks_runs_only_hooks_seen_at_session_start(tmp_path: Path, repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    good = hooks / "pre-commit"
    good.write_text(f"#!/bin/sh\necho start-hook >> {tmp_path / 'marks'}\n")
    good.chmod(0o755)
    remember_session_start(repo)
    allowed = GitIdentity(name="A", email="a@x", allow_hooks=True)
    (repo / "a.txt").write_text("a\n")
    tool(repo, command="add", paths=["a.txt"])
    out, err = tool(repo, allowed, command="commit", message="with the start hook")
    assert not err, out
    assert ran(tmp_path / "marks") == ["start-hook"]  # legit: the hook seen at start runs

    marker_script(hooks, tmp_path / "marks", "new-hook").rename(hooks / "post-commit")  # written mid-session
    (repo / "b.txt").write_text("b\n")
    tool(repo, command="add", paths=["b.txt"])
    out, err = tool(repo, allowed, command="commit", message="after a hook was planted")
    assert err and "post-commit" in out and "after the session started" in out
    good.write_text(f"#!/bin/sh\necho changed-hook >> {tmp_path / 'marks'}\n")
    (hooks / "post-commit").unlink()
    out, err = tool(repo, allowed, command="commit", message="after the hook changed")
    assert err and "pre-commit" in out
    assert ran(tmp_path / "marks") == ["start-hook"]


# --- a hostile repository, opened end to end ---------------------------------------------------------------


def hostile_repo(tmp_path: Path, home: Path) -> tuple[Path, Path]:
    """A repository whose own .git (a downloaded tarball with its .git, say) names a program everywhere."""
    root = tmp_path / "hostile"
    root.mkdir()
    marks = tmp_path / "marks"
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("def main():\n    return 1\n")
    (root / "data.bin").write_text("payload\n")
    (root / "readme.txt").write_text("read me\n")
    git(root, "add", "."), git(root, "commit", "-q", "-m", "initial")
    # A signed-looking commit, so that log.showSignature has something to verify.
    tree = git(root, "rev-parse", "HEAD^{tree}").strip()
    parent = git(root, "rev-parse", "HEAD").strip()
    body = (
        f"tree {tree}\nparent {parent}\nauthor T <t@x> 1700000000 +0000\ncommitter T <t@x> 1700000000 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    signed = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=root, input=body,
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    git(root, "update-ref", "refs/heads/main", signed)
    bin_dir = tmp_path / "bin"
    p = {name: marker_script(bin_dir, marks, name) for name in (
        "fsmonitor", "clean", "smudge", "process", "textconv", "diffcmd", "external", "gpg", "pager", "editor",
        "seqeditor", "ssh", "askpass", "credential", "uploadpack", "receivepack", "packhook", "mergedriver",
        "included-clean",
    )}  # fmt: skip
    hooks = tmp_path / "repo-hooks"
    for name in ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-checkout",
                 "reference-transaction", "post-index-change", "pre-auto-gc"):  # fmt: skip
        marker_script(hooks, marks, name).rename(hooks / name)
        marker_script(root / ".git" / "hooks", marks, name).rename(root / ".git" / "hooks" / name)
    (root / "extra.cfg").write_text(f'[filter "inc"]\n\tclean = {p["included-clean"]}\n')
    with (root / ".git" / "config").open("a") as fh:
        fh.write(
            f"[core]\n\tfsmonitor = {p['fsmonitor']}\n\thooksPath = {hooks}\n\tpager = {p['pager']}\n"
            f"\teditor = {p['editor']}\n\tsshCommand = {p['ssh']}\n\taskPass = {p['askpass']}\n"
            f"[sequence]\n\teditor = {p['seqeditor']}\n"
            f"[filter \"evil\"]\n\tclean = {p['clean']}\n\tsmudge = {p['smudge']}\n\trequired = true\n"
            f"[filter \"proc\"]\n\tprocess = {p['process']}\n"
            f"[diff \"evil\"]\n\ttextconv = {p['textconv']}\n\tcommand = {p['diffcmd']}\n"
            f"[diff]\n\texternal = {p['external']}\n"
            f"[merge \"evil\"]\n\tdriver = {p['mergedriver']}\n"
            f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {p['gpg']}\n[commit]\n\tgpgSign = true\n"
            f"[credential]\n\thelper = {p['credential']}\n"
            f"[uploadpack]\n\tpackObjectsHook = {p['packhook']}\n"
            f"[remote \"origin\"]\n\turl = {root}\n\tuploadpack = {p['uploadpack']}\n"
            f"\treceivepack = {p['receivepack']}\n"
            f"[pager]\n\tlog = {p['pager']}\n\tdiff = {p['pager']}\n"
            "[include]\n\tpath = ../extra.cfg\n"
        )  # fmt: skip
    (root / ".gitattributes").write_text("*.py filter=evil diff=evil merge=evil\n*.bin filter=proc\n*.txt filter=inc\n")
    (root / "app.py").write_text("def main():\n    return 2\n")  # a change for status, diff and add to see
    (root / "notes.txt").write_text("notes\n")
    (root / "readme.txt").write_text("read me again\n")
    (root / "data.bin").write_text("payload 2\n")
    return root, marks


def test_hostile_repository_plants_are_real(tmp_path: Path, home: Path) -> None:
    """The control for the tests below: plain git in this repository runs the planted programs."""
    root, marks = hostile_repo(tmp_path, home)
    plain_git(root, "status")
    plain_git(root, "log", "-1")
    plain_git(root, "diff")
    assert {"fsmonitor", "clean", "process", "included-clean", "gpg", "diffcmd"} <= set(ran(marks))


def test_git_tool_runs_nothing_in_a_hostile_repository(tmp_path: Path, home: Path) -> None:
    root, marks = hostile_repo(tmp_path, home)
    remember_session_start(root)
    outputs = {}
    for args in ({"command": "status"}, {"command": "diff"}, {"command": "log"}, {"command": "show"},
                 {"command": "branch"}, {"command": "add", "paths": ["app.py", "notes.txt"]}):  # fmt: skip
        outputs[args["command"]] = tool(root, **args)
    assert ran(marks) == []
    assert " M app.py" in outputs["status"][0] and "?? notes.txt" in outputs["status"][0], outputs["status"]
    assert "+    return 2" in outputs["diff"][0]
    assert outputs["log"][0].splitlines()[0].endswith("T: signed")
    out, err = tool(root, command="commit", message="x")
    assert err and "allow_hooks" in out  # the planted hooks are reported, not run
    assert ran(marks) == []


def test_branch_switch_never_runs_post_checkout(tmp_path: Path, home: Path) -> None:
    from kimi_cli.hostsafe.git.state import git_state, switch_to_work_branch

    root, marks = hostile_repo(tmp_path, home)
    remember_session_start(root)
    state = git_state(root)
    assert state is not None and state["branch"] == "main" and state["dirty"]
    assert switch_to_work_branch(root, "kimi/work") == "created branch"
    assert git(root, "symbolic-ref", "--short", "HEAD").strip() == "kimi/work"
    assert ran(marks) == []


def test_core_worktree_in_config_cannot_send_git_elsewhere(tmp_path: Path, repo: Path) -> None:
    elsewhere = tmp_path / "victim"
    elsewhere.mkdir()
    (elsewhere / "calc.py").write_text("victim's file\n")
    remember_session_start(repo)
    git(repo, "config", "core.worktree", str(elsewhere))
    (repo / "calc.py").write_text("scratch\n")
    out, err = tool(repo, command="restore", paths=["calc.py"])
    assert not err, out
    assert (repo / "calc.py").read_text().startswith("def add")  # restored in the workspace
    assert (elsewhere / "calc.py").read_text() == "victim's file\n"


def test_kimi_pack_in_a_hostile_repository_runs_nothing(tmp_path: Path, home: Path, env: dict) -> None:
    root, marks = hostile_repo(tmp_path, home)
    proc = run_kimi(["pack", "-f", "text"], root, env)
    assert proc.returncode == 0, proc.stderr
    assert "app.py" in proc.stdout and "return 2" in proc.stdout  # the listing and the reads still work
    assert ran(marks) == []


def test_kimi_p_with_branch_in_a_hostile_repository_runs_nothing(
    tmp_path: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    root, marks = hostile_repo(tmp_path, home)
    calls = [tool_call("Git", {"command": c}, f"Git:{i}") for i, c in enumerate(("status", "diff", "log", "show"))]
    server.add(
        {"tool_calls": calls},
        {"tool_calls": [tool_call("WriteFile", {"path": "new.py", "content": "x = 1\n"}, "WriteFile:9")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "look at the repository", "--branch", "kimi/task"], root, env, server)
    assert proc.returncode == 0, proc.stderr
    assert git(root, "symbolic-ref", "--short", "HEAD").strip() == "kimi/task"
    status, diff, log, _show = tool_results(server, 1)
    assert "## kimi/task" in status and " M app.py" in status
    assert "+    return 2" in diff and "T: signed" in log
    assert (root / "new.py").exists()
    assert ran(marks) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the repository to another user")
def test_a_repository_owned_by_another_user_is_refused_unless_listed_as_safe(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("SUDO_UID", raising=False)
    subprocess.run(["chown", "-R", "1001:1001", str(repo)], check=True)
    remember_session_start(repo)
    out, err = tool(repo, command="status")
    assert err and "owned by another user" in out and "safe.directory" in out
    (user_home / ".gitconfig").write_text(f"[safe]\n\tdirectory = {repo}\n")
    out, err = tool(repo, command="status")
    assert not err and "## main" in out


# --- the second layer: host git in its own Landlock domain ------------------------------------------------

needs_confinement = pytest.mark.skipif(not git_confine.available(), reason="no Landlock on this kernel")


@needs_confinement
def test_a_key_no_override_names_still_cannot_start_a_program(tmp_path: Path, repo: Path) -> None:
    """trailer.<key>.command is in no list of ours: git_confine's domain is what stops it."""
    marks = tmp_path / "marks"
    git(repo, "config", "trailer.x.command", str(marker_script(tmp_path / "bin", marks, "trailer")))
    remember_session_start(repo)
    location = open_repo(repo)
    out = run_git(["interpret-trailers", "--trailer", "x=y"], repo, location, input=b"message\n")
    assert out.returncode == 0 and b"message" in out.stdout  # git itself ran
    assert ran(marks) == []
    plain_git(repo, "interpret-trailers", "--trailer", "x=y")
    assert "trailer" in ran(marks)


@needs_confinement
def test_confined_git_executes_only_git_and_writes_only_where_allowed(tmp_path: Path) -> None:
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir(), outside.mkdir()

    def run(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(argv, capture_output=True, cwd=inside)

    assert git_confine.run_confined(lambda: run(["git", "init", "-q", str(inside)]), [inside]).returncode == 0
    assert (inside / ".git" / "HEAD").exists()  # legit: git runs and writes its repository
    refused = git_confine.run_confined(lambda: run(["git", "init", "-q", str(outside)]), [inside])
    assert refused.returncode != 0 and not (outside / ".git").exists()
    with pytest.raises(PermissionError):
        git_confine.run_confined(lambda: run(["sh", "-c", "true"]), [inside])
    assert run(["sh", "-c", "true"]).returncode == 0  # the caller's own thread is not confined


@needs_confinement
def test_a_writer_racing_the_filter_read_still_gets_nothing_run(tmp_path: Path, repo: Path) -> None:
    """An include file in the work tree flips a filter in and out while the Git tool runs status."""
    marks = tmp_path / "marks"
    script = marker_script(tmp_path / "bin", marks, "racing-filter")
    (repo / ".gitattributes").write_text("*.py filter=race\n")
    git(repo, "add", ".gitattributes"), git(repo, "commit", "-q", "-m", "attributes")
    git(repo, "config", "include.path", "../extra.cfg")
    extra = repo / "extra.cfg"
    remember_session_start(repo)
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            extra.write_text(f'[filter "race"]\n\tclean = {script}\n')
            extra.write_text("")

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        for i in range(30):
            (repo / "calc.py").write_text(f"def add(a, b):\n    return a + b + {i}\n")
            out, err = tool(repo, command="status")
            assert not err and " M calc.py" in out
    finally:
        stop.set()
        thread.join()
    assert ran(marks) == []
