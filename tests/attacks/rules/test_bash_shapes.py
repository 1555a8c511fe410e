"""Approval rules against a reader of our source: shell shapes that hide a program, each proven real in bash.

Deny rules (the only guard with `--sandbox none`) were walked around by three shapes the parser read as a
harmless literal name: brace expansion with a quoted blank (`{rm,' x'}` is `rm ' x'`), a bracket pattern
with a quoted blank (`/bin/r[' 'm]` matches /bin/rm), and `time -p` (the keyword's option was taken for
the program). git runs settings as commands (`git -c alias.x='!rm x' x`, `core.fsmonitor`, GIT_CONFIG_*
values), which the rules must read too. An allow rule (`ls`) let `ls > out.txt` write
outside the workspace when out.txt is a link out of it (a repository ships such a link; the Git tool checks
one out). Each sits beside the legitimate
command that must keep working.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from kimi_cli.approval.engine import Approver
from kimi_cli.approval.rules import Rules, check
from kimi_cli.sandbox.backends.none import NoSandbox
from kimi_cli.sandbox.policy import build_policy
from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.shell import Shell
from kimi_cli.tools.workspace import Workspace

# (command, the file bash deletes when it runs it)
DENY_BYPASSES = [
    ("{rm,' victim'}", " victim"),
    ("{rm,\\ victim}", " victim"),
    ("{/bin/rm,' victim'}", " victim"),
    ("/bin/r[' 'm] victim", "victim"),
    ("/bin/r['m'] victim", "victim"),
    ("time -p rm victim", "victim"),
    ("time -p -- rm victim", "victim"),
    ("! time -p rm victim", "victim"),
    ("echo ok; time -p rm victim", "victim"),
]


@pytest.mark.parametrize(("command", "victim"), DENY_BYPASSES)
def test_deny_rules_catch_rm_hidden_by_braces_brackets_or_time_p(command: str, victim: str, tmp_path: Path) -> None:
    (tmp_path / victim).write_text("x")
    subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=10)
    assert not (tmp_path / victim).exists()  # the shape is real: bash ran rm
    assert check(command, [], ["rm"]).kind in ("denied", "unreadable")  # asked or refused, never waved through


@pytest.mark.parametrize(
    ("command", "allow", "kind"),
    [
        ("echo {a,b}", [], "none"),  # braces in an argument are not a program
        ("awk -F, '{print $1}' data.csv", ["awk"], "allowed"),  # quoted braces are text
        # `{}` is text (the line is read, not "unreadable"); since issue 40 an allow rule `find` no longer
        # approves -exec, which runs a program (shell/options.py), so this one asks
        ("find . -name '*.py' -exec wc -l {} +", ["find"], "none"),
        ("find . -name '*.py' -newer {}", ["find"], "allowed"),
        ("[ -f setup.py ] && echo yes", [], "none"),  # a test expression is not a glob
        ("time -p pytest -q", [], "none"),
        ("echo '[x y]'", ["echo"], "allowed"),
    ],
)
def test_ordinary_braces_brackets_and_time_still_read_as_before(command: str, allow: list[str], kind: str) -> None:
    assert check(command, allow, ["rm"]).kind == kind


# git runs configuration values as commands: (command, the file git's shell deletes)
GIT_BYPASSES = [
    ("git -c alias.x='!rm victim' x", "victim"),
    ("git -c core.fsmonitor='rm victim' status", "victim"),
    ("GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.y GIT_CONFIG_VALUE_0='!rm victim' git y", "victim"),
    ("git config alias.z '!rm victim' && git z", "victim"),
    ("env git -c alias.x='!/bin/rm victim' x", "victim"),
]


@pytest.mark.parametrize(("command", "victim"), GIT_BYPASSES)
def test_deny_rules_catch_rm_run_by_git_from_its_settings(command: str, victim: str, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / victim).write_text("x")
    subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=20)
    assert not (tmp_path / victim).exists()  # the shape is real: git ran rm
    assert check(command, [], ["rm"]).kind == "denied"


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ('git -c "$X" x', "unreadable"),  # the value is computed when it runs
        ("git --config-env=alias.x=FOO x", "unreadable"),  # the value comes from the environment
        ("git status", "allowed"),
        ('git commit -m "rm the old file"', "allowed"),  # a message is not a command
        ("git -C sub log -- rm", "none"),  # a path named rm is not a program
        ("git -c user.name=Kimi log", "none"),
    ],
)
def test_ordinary_git_commands_still_read_as_before(command: str, kind: str) -> None:
    assert check(command, ["git status", "git commit"], ["rm"]).kind == kind


# --- an allow rule and a redirection through a link, with --sandbox none ------------------------------------


def run_headless(ws: Path, tmp_path: Path, command: str) -> tuple[str, bool]:
    private_tmp = tmp_path / "private-tmp"
    private_tmp.mkdir(exist_ok=True)
    shell = Shell(
        NoSandbox(build_policy(ws, private_tmp), 30_000), approver=Approver.unattended(Rules.parse(["ls"]), yolo=False)
    )
    params = Shell.Params.model_validate({"command": command})
    try:
        result = asyncio.run(shell.run(params, ToolContext(workspace=Workspace(ws))))
    except Exception as exc:  # ToolError: the refusal, as the model reads it
        return str(exc), True
    return result.output, result.is_error


def test_an_allow_rule_never_covers_a_redirection_through_a_link_out_of_the_workspace(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    victim = outside / "bashrc"
    victim.write_text("the user's own file\n")
    (ws / "out.txt").symlink_to(victim)  # shipped by the repository, or checked out by the Git tool
    (ws / "logs").symlink_to(outside)
    for command in ("ls > out.txt", "ls >> out.txt", "ls > logs/bashrc", "ls 2> out.txt"):
        output, refused = run_headless(ws, tmp_path, command)
        assert refused and "not run" in output, (command, output)
    assert victim.read_text() == "the user's own file\n"


def test_an_allow_rule_still_covers_redirections_inside_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "build").mkdir(parents=True)
    (ws / "latest").symlink_to(ws / "build")  # a link that stays inside
    for command in ("ls > listing.txt", "ls > latest/listing.txt", "ls 2>&1 > /dev/null", "ls > build/x 2>&1"):
        output, refused = run_headless(ws, tmp_path, command)
        assert not refused, (command, output)
    assert "build" in (ws / "listing.txt").read_text()
    assert (ws / "build" / "listing.txt").exists()
