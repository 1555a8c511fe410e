"""A repository a command makes runs nothing later: not when the user's own git reads it after the session.

The finding: in a folder with no `.git` at the start, a command ran `git init` and set `core.fsmonitor`.
kimi's Git tool never runs it, but the user's next `git status` on the host did; kimi only named it at
exit, and in headless CI nobody reads that. Now the sandbox's guard (kimi_cli/sandbox/guard/command.py, the
same on every backend) takes out of any repository a command made or changed, at the top or nested, what
would run a program (fsmonitor, hooks, filters, drivers, pagers, editors, helpers, includes, `!` aliases),
removes `.git` pointers that lead out, tells the model, and names it all in the headless JSON result.
The legitimate use stays: `git init`, commit and branch inside the sandbox, and the user's git afterwards.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, backends, make_rig

from scripted_server import ScriptedModelServer
from support import plain_git, ran, result_json, run_kimi, tool_call, tool_results

LOCAL = [b for b in backends() if b != "docker"]  # the Docker test image has no git: planted by printf below
PLANTS = (
    "git init -q && printf '#!/bin/sh\\necho fsmonitor >> {marks}\\n' > .fsm && chmod +x .fsm && "
    "git config core.fsmonitor \"$PWD/.fsm\" && git config alias.st '!echo alias >> {marks}' && "
    "mkdir -p sub && cd sub && git init -q && "
    "printf '#!/bin/sh\\necho hook >> {marks}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && "
    "git config core.pager 'echo pager >> {marks}; cat' && echo planted"
)
CONFIG = (  # every kind of setting that runs a program, as a command can write it without git
    "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = echo fsmonitor >> {marks}\n\tpager = x\n\teditor = x\n"
    "\tsshCommand = x\n\thooksPath = h\n\taskPass = x\n[Core]\n\tFSMonitor = x\n[include]\n\tpath = ../inc\n"
    '[includeIf "gitdir:/"]\n\tpath = ../inc\n[filter "z"]\n\tclean = x\n\tsmudge = x\n\tprocess = x\n'
    '[diff "d"]\n\ttextconv = x\n\tcommand = x\n[merge "m"]\n\tdriver = x\n[credential]\n\thelper = x\n'
    '[credential "https://h"]\n\thelper = x\n[gpg]\n\tprogram = x\n[gpg "ssh"]\n\tprogram = x\n'
    "[pager]\n\tlog = x\n[sequence]\n\teditor = x\n[alias]\n\tst = !x\n\tco = checkout\n[user]\n\tname = Kept\n"
)
PROGRAM_KEYS = {"core.fsmonitor", "core.pager", "core.editor", "core.sshcommand", "core.hookspath", "core.askpass",
                "include.path", "includeif.gitdir:/.path", "filter.z.clean", "filter.z.smudge", "filter.z.process",
                "diff.d.textconv", "diff.d.command", "merge.m.driver", "credential.helper", "credential.https://h.helper",
                "gpg.program", "gpg.ssh.program", "pager.log", "sequence.editor", "alias.st"}  # fmt: skip


def plain_folder(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "notes.txt").write_text("not a repository\n")
    return root


def config_keys(git_dir: Path) -> dict[str, str]:
    out = subprocess.run(["git", "config", "--file", str(git_dir / "config"), "--list"], capture_output=True,
                         text=True, check=True)  # fmt: skip
    return dict(line.split("=", 1) for line in out.stdout.splitlines())


def users_own_git(root: Path) -> None:
    """After the session, in the user's terminal: status, an alias, a commit with hooks on, a paged log."""
    for args in (["status"], ["st"], ["commit", "-q", "--allow-empty", "-m", "u"], ["-p", "log"]):
        plain_git(root, *args)
        plain_git(root / "sub", *args)


# --- through kimi -p --------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", LOCAL)
def test_kimi_p_git_init_and_fsmonitor_in_a_plain_folder_run_nothing_later(
    backend: str, tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    root, marks = plain_folder(tmp_path), tmp_path / "marks"
    server.add({"tool_calls": [tool_call("Shell", {"command": PLANTS.format(marks=marks)}, "plant")]}, {"text": "ok"})
    proc = run_kimi(["-p", "set up", "--sandbox", backend, "--output-format", "json"], root, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (told,) = tool_results(server, 1)
    assert "planted" in told and "core.fsmonitor" in told and "hooks/pre-commit" in told  # the model is told
    removed = {(r["repository"], r["setting"]) for r in result_json(proc)["git_settings_removed"]}
    assert {(".git", "core.fsmonitor"), (".git", "alias.st"), ("sub/.git", "hooks/pre-commit"),
            ("sub/.git", "core.pager")} <= removed  # fmt: skip
    users_own_git(root)
    assert ran(marks) == []
    assert (root / ".git" / "HEAD").exists() and (root / "sub" / ".git" / "HEAD").exists()  # still repositories


@pytest.mark.parametrize("backend", LOCAL)
def test_kimi_p_git_init_commit_and_branch_in_a_plain_folder_work(
    backend: str, tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    root = plain_folder(tmp_path)
    work = (
        "git init -q -b main && git add notes.txt && git -c user.name=K -c user.email=k@x commit -q -m first && "
        "git branch feature && git switch -q feature && git config user.name Kimi && git branch --list"
    )
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": work}, "init")]},
        {"tool_calls": [tool_call("StrReplaceFile", {"path": "notes.txt", "edit": {"old": "not a", "new": "a"}}, "e")]},
        {"tool_calls": [tool_call("Shell", {"command": "git log --oneline && git status --short"}, "log")]},
        {"text": "done"},
    )  # fmt: skip
    proc = run_kimi(["-p", "init", "--sandbox", backend, "--output-format", "json"], root, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (init,) = tool_results(server, 1)
    assert init.startswith("exit code: 0") and "* feature" in init and "main" in init, init
    assert "removed" not in init
    log = tool_results(server, 3)[-1]
    assert "first" in log and "M notes.txt" in log
    assert result_json(proc)["git_settings_removed"] == []
    assert config_keys(root / ".git")["user.name"] == "Kimi"  # ordinary settings stay
    assert (root / "notes.txt").read_text() == "a repository\n"
    marks = tmp_path / "marks"
    plain_git(root, "status")
    assert ran(marks) == []


# --- on every backend, through the Shell tool --------------------------------------------------------------


@pytest.fixture(params=backends())
def plain_rig(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A session in a folder that is not a repository (the rig's own `git init` undone)."""
    rig, _ = make_rig(tmp_path, request.param, prepare=lambda ws: shutil.rmtree(ws / ".git"))
    yield rig
    rig.close()


def test_every_program_setting_of_a_nested_repository_written_by_hand_goes(plain_rig: Rig, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    text = CONFIG.format(marks=marks).replace("\n", "\\n").replace("\t", "\\t")
    result = plain_rig.run(
        "mkdir -p a/b/.git/objects a/b/.git/refs/heads a/b/.git/hooks && echo 'ref: refs/heads/main' > a/b/.git/HEAD"
        f" && printf '{text}' > a/b/.git/config && printf '#!/bin/sh\\necho hook >> {marks}\\n' > a/b/.git/hooks/"
        "post-checkout && chmod +x a/b/.git/hooks/post-checkout && echo made"
    )
    assert "made" in result.output and "a/b/.git: core.fsmonitor" in result.output
    keys = config_keys(plain_rig.ws / "a" / "b" / ".git")
    assert not PROGRAM_KEYS & set(keys), keys
    assert keys["user.name"] == "Kept" and keys["alias.co"] == "checkout" and keys["core.repositoryformatversion"]
    assert not (plain_rig.ws / "a" / "b" / ".git" / "hooks" / "post-checkout").exists()
    plain_git(plain_rig.ws / "a" / "b", "status")
    assert ran(marks) == []


def test_a_pointer_out_of_the_workspace_and_a_bare_repository_are_handled(plain_rig: Rig, tmp_path: Path) -> None:
    outside = plain_rig.outside
    result = plain_rig.run(
        f"mkdir -p p q/objects q/refs && echo 'gitdir: {outside}/gd' > p/.git && ln -s {outside}/gd2 .git && "
        "echo 'ref: refs/heads/main' > q/HEAD && printf '[core]\\n\\tbare = true\\n\\tpager = x\\n' > q/config; echo ok"
    )
    assert "ok" in result.output
    assert not (plain_rig.ws / "p" / ".git").exists() and not (plain_rig.ws / ".git").is_symlink()
    assert "core.pager" not in config_keys(plain_rig.ws / "q") and "q: core.pager" in result.output


def test_a_background_task_that_plants_later_is_cleaned_when_it_ends(plain_rig: Rig, tmp_path: Path) -> None:
    if plain_rig.shell.tasks is None:
        pytest.skip("no background tasks on this backend")
    task = plain_rig.background(
        "sleep 1; mkdir -p late/.git/objects late/.git/refs && echo 'ref: refs/heads/m' > late/.git/HEAD && "
        "printf '[core]\\n\\tfsmonitor = x\\n' > late/.git/config"
    )
    out = plain_rig.wait_task(task)
    assert "late/.git: core.fsmonitor" in out
    assert "core.fsmonitor" not in config_keys(plain_rig.ws / "late" / ".git")


def test_a_repository_present_at_the_start_keeps_its_own_settings(backend_rig_with_vendor: Rig, tmp_path: Path) -> None:
    """The user's own nested repository: its credential helper and hook stay; what a command adds goes."""
    rig = backend_rig_with_vendor
    vendor = rig.ws / "vendor" / "lib" / ".git"
    hook = (vendor / "hooks" / "pre-commit").read_bytes()
    first = rig.run("echo nothing to do")
    assert "removed" not in first.output
    result = rig.run("printf '[core]\\n\\tfsmonitor = x\\n' >> vendor/lib/.git/config; echo added")
    keys = config_keys(vendor)
    assert "core.fsmonitor" not in keys and keys["credential.helper"] == "store"
    assert (vendor / "hooks" / "pre-commit").read_bytes() == hook
    assert "vendor/lib/.git: core.fsmonitor" in result.output


@pytest.fixture(params=backends())
def backend_rig_with_vendor(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    def prepare(ws: Path) -> None:
        lib = ws / "vendor" / "lib"
        lib.mkdir(parents=True)
        subprocess.run(["git", "init", "-q"], cwd=lib, check=True)
        subprocess.run(["git", "config", "credential.helper", "store"], cwd=lib, check=True)
        (lib / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
        (lib / ".git" / "hooks" / "pre-commit").chmod(0o755)

    rig, _ = make_rig(tmp_path, request.param, prepare=prepare)
    yield rig
    rig.close()


def test_the_workspace_repository_is_checked_after_every_command_on_every_backend(rig: Rig) -> None:
    """bwrap and Docker mount .git read-only as well, but the guard does not lean on the mount: a change that
    got past it (made here on the host, as a mount could miss) is put back after the next command."""
    attributes = rig.ws / ".git" / "info" / "attributes"
    config = (rig.ws / ".git" / "config").read_bytes()
    rig.run("true")
    attributes.write_text("* filter=z\n")
    (rig.ws / ".git" / "config").write_bytes(config + b"[core]\n\tfsmonitor = x\n")
    result = rig.run("echo fine")
    assert ".git/info/attributes" in result.output and ".git/config" in result.output
    assert not attributes.exists() and (rig.ws / ".git" / "config").read_bytes() == config


def test_a_repository_behind_a_folder_made_unreadable_is_cleaned_once_it_opens(plain_rig: Rig) -> None:
    """As a user, `chmod 000` keeps kimi's walk out of a folder; a later `chmod 755` must not let it slip by."""
    plain_rig.run(
        "mkdir -p d/r/.git/objects d/r/.git/refs && echo 'ref: refs/heads/m' > d/r/.git/HEAD && "
        "printf '[core]\\n\\tfsmonitor = x\\n' > d/r/.git/config && chmod 000 d; echo hidden"
    )
    result = plain_rig.run("chmod 755 d; echo shown")
    assert "shown" in result.output or "d/r/.git" in result.output
    assert "core.fsmonitor" not in config_keys(plain_rig.ws / "d" / "r" / ".git")
