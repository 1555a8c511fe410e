"""A repository a command makes cannot turn the user's `git fetch` into a program run.

The attack: in a plain folder a command ran `git init`, set `protocol.ext.allow = always` and a remote whose
URL is `ext::sh -c ...`. Neither names a program the way `core.fsmonitor` does, so the guard kept both; the
user's `git fetch` (or `git pull`, or an editor's auto-fetch) then ran the command: git's `ext` transport
runs whatever the URL says once a config allows it (the default is never). Now `protocol.allow` and
`protocol.ext.allow` set to anything but `never` count as naming a program
(kimi_cli/hostsafe/git/repo_guard.py, PROGRAM_KEY), so the guard takes them out and names them. The
legitimate use stays: a remote over the file protocol with `protocol.file.allow = always` (what local
submodules need) is kept, and the user's fetch from it works.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sandbox_fixtures import backends

from kimi_cli.hostsafe.git.repo_guard import names_program

from scripted_server import ScriptedModelServer
from support import plain_folder, plain_git, ran, result_json, run_kimi, tool_call, tool_results

LOCAL = [b for b in backends() if b != "docker"]  # the Docker test image has no git
PLANT = (
    "git init -q && git config protocol.ext.allow always && git config protocol.allow always && "
    "git config remote.origin.url 'ext::sh -c echo% ext% >>% {marks}' && "
    "git config remote.origin.fetch '+refs/heads/*:refs/remotes/origin/*' && echo planted"
)


def test_the_table_names_what_enables_the_ext_transport() -> None:
    assert names_program("protocol.ext.allow", "always") and names_program("protocol.allow", "user")
    assert names_program("protocol.EXT.allow", " Always ")
    assert not names_program("protocol.ext.allow", "never") and not names_program("protocol.allow", "never")
    assert not names_program("protocol.file.allow", "always") and not names_program("protocol.version", "2")


def test_the_users_fetch_runs_an_ext_remote_the_config_allows(tmp_path: Path) -> None:
    """The control: without kimi, the plant runs at the user's fetch."""
    root, marks = plain_folder(tmp_path), tmp_path / "marks"
    subprocess.run(["sh", "-c", PLANT.format(marks=marks)], cwd=root, check=True, capture_output=True)
    plain_git(root, "fetch", "origin")
    assert ran(marks) == ["ext"]


@pytest.mark.parametrize("backend", LOCAL)
def test_kimi_p_an_ext_remote_a_command_allowed_runs_nothing_at_the_users_fetch(
    backend: str, tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    root, marks = plain_folder(tmp_path), tmp_path / "marks"
    server.add({"tool_calls": [tool_call("Shell", {"command": PLANT.format(marks=marks)}, "plant")]}, {"text": "ok"})
    proc = run_kimi(["-p", "go", "--sandbox", backend, "--output-format", "json"], root, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (told,) = tool_results(server, 1)
    assert "planted" in told and "protocol.ext.allow" in told, told
    removed = {(r["repository"], r["setting"]) for r in result_json(proc)["git_settings_removed"]}
    assert {(".git", "protocol.ext.allow"), (".git", "protocol.allow")} <= removed, removed
    for args in (["fetch", "origin"], ["pull", "origin", "main"], ["ls-remote", "origin"]):
        plain_git(root, *args)
    assert ran(marks) == []


@pytest.mark.parametrize("backend", LOCAL)
def test_kimi_p_a_file_remote_and_its_protocol_setting_stay(
    backend: str, tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    root = plain_folder(tmp_path)
    upstream = root / "upstream.git"
    work = (
        "git init -q --bare upstream.git && git init -q -b main && git add notes.txt && "
        "git -c user.name=K -c user.email=k@x commit -q -m one && git config protocol.file.allow always && "
        f"git remote add origin {upstream} && git push -q origin main && echo pushed"
    )
    server.add({"tool_calls": [tool_call("Shell", {"command": work}, "remote")]}, {"text": "ok"})
    proc = run_kimi(["-p", "go", "--sandbox", backend, "--output-format", "json"], root, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (told,) = tool_results(server, 1)
    assert "pushed" in told, told
    assert result_json(proc)["git_settings_removed"] == []
    plain_git(root, "fetch", "origin")
    out = subprocess.run(["git", "config", "protocol.file.allow"], cwd=root, capture_output=True, text=True)
    assert out.stdout.strip() == "always"
    assert (root / ".git" / "refs" / "remotes" / "origin" / "main").exists()
