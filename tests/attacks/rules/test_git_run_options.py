"""Deny rules against programs git runs from its own options (each shape proven in bash first).

Beyond `-c` values and `git config` values (test_bash_shapes.py), git also runs command lines given as
options of its subcommands (`rebase --exec`, `bisect run`, `difftool -x`, `filter-branch --tree-filter`,
`--upload-pack`/`--receive-pack`/`--exec` for a local remote, `grep -O`, `submodule foreach`), and reads
config from `GIT_CONFIG_PARAMETERS`; `export`/`declare -x` of `GIT_EXTERNAL_DIFF` hands git a program too.
With `--sandbox none` a deny rule `rm` is the only guard; each of these ran `rm` while `check` said "none".
Beside them: ordinary uses of the same subcommands must still read as before.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kimi_cli.approval.rules import check

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip

# (command, why git runs rm)
GIT_RUNS_RM = [
    ("git rebase --exec 'rm victim' HEAD~1", "rebase runs --exec after each commit"),
    ("git rebase -x 'rm victim' HEAD~1", "the short form"),
    ("git -C . rebase --exec='rm victim' HEAD~1", "after a global option, glued value"),
    ("git bisect start HEAD HEAD~1 && git bisect run rm victim", "bisect run runs its arguments"),
    ("git difftool -y -x 'rm victim' HEAD~1", "difftool's --extcmd"),
    ("git difftool --extcmd='rm victim' -y HEAD~1", "difftool's --extcmd, glued"),
    ("git filter-branch -f --tree-filter 'rm -f ../../victim' HEAD", "filter-branch's filters are shell code"),
    ("git ls-remote --upload-pack='rm victim;' .", "a local remote's upload-pack is run by the shell"),
    ("git fetch --upload-pack='rm victim;' .", "the same through fetch"),
    ("git clone -u 'rm victim;' . cl", "clone -u"),
    ("git archive --remote=. --exec='rm victim;' HEAD", "archive --exec"),
    ("git push --receive-pack='rm victim;' . HEAD:refs/heads/other", "push --receive-pack"),
    ("git grep -O'rm victim;' b", "grep opens the matching files in the 'pager' named"),
    ("git grep --open-files-in-pager='rm victim;' b", "the long form"),
    ("git -c protocol.file.allow=always submodule -q add ./ sub >/dev/null 2>&1; git submodule foreach 'rm ../victim'",
     "submodule foreach runs its argument in a shell"),
    ("GIT_CONFIG_PARAMETERS=\"'alias.x=!rm victim'\" git x", "git's own environment form of -c"),
    ("export GIT_EXTERNAL_DIFF='rm victim;'; git diff HEAD~1", "export: the value is not read like NAME=value"),
    ("declare -x GIT_EXTERNAL_DIFF='rm victim;'; git diff HEAD~1", "declare -x exports too"),
]  # fmt: skip


def _repo(path: Path) -> None:
    script = "git init -q -b main && echo a > f && git add f && git commit -qm 1 && echo b > f && git commit -qam 2"
    subprocess.run(script, shell=True, cwd=path, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


@pytest.mark.parametrize(("command", "why"), GIT_RUNS_RM)
def test_deny_rules_catch_rm_run_by_a_git_subcommands_options(command: str, why: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    _repo(ws)
    (ws / "victim").write_text("x")
    env = {**os.environ, **GIT_ENV, "HOME": str(home)}
    subprocess.run(["bash", "-c", command], cwd=ws, env=env, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert not (ws / "victim").exists(), f"the shape is not real here ({why})"  # git really ran rm
    assert check(command, [], ["rm"]).kind in ("denied", "unreadable"), why


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("git rebase -i HEAD~3", "none"),
        ("git rebase --onto main feature", "none"),
        ("git bisect start HEAD HEAD~5", "none"),
        ("git difftool -y HEAD~1", "none"),
        ("git grep -n rm", "none"),  # a pattern named rm is not a program
        ("git fetch origin", "none"),
        ("git clone https://example.com/r.git", "none"),
        ("git submodule update --init", "none"),
        ("export GIT_PAGER=cat; git log", "none"),
        ("git status", "allowed"),
    ],
)
def test_ordinary_uses_of_those_subcommands_still_read_as_before(command: str, kind: str) -> None:
    assert check(command, ["git status"], ["rm"]).kind == kind
