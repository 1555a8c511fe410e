"""A rebase a command leaves in progress in a repository it made runs none of its `exec` lines later.

The attack: in a plain folder a command ran `git init`, made a commit, and wrote an interactive rebase's
state by hand (`.git/rebase-merge/git-rebase-todo` holding `exec echo ... >> marks`). Nothing in config or
hooks, so the guard found nothing to take out; `git status` then told the user "interactive rebase in
progress", and the user's `git rebase --continue` ran the line. The workspace's own `.git` was covered
(restore.py puts rebase-merge back), a repository a command made was not. Now the guard
(kimi_cli/sandbox/guard/repo_scrub.py) takes out every `exec`/`x` line that was not there at the start and
names it in git_settings_removed. The legitimate use stays: a rebase stopped by `break`, continued by the
user after the session, replays its picks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_fixtures import backends

from scripted_server import ScriptedModelServer
from support import plain_folder, plain_git, ran, result_json, run_kimi, tool_call, tool_results

LOCAL = [b for b in backends() if b != "docker"]  # the Docker test image has no git
COMMIT = "git -c user.name=K -c user.email=k@x commit -q"
REBASE_STATE = (  # what `git rebase -i` leaves, written by hand, with two ways of spelling exec
    "git init -q -b main && {commit} --allow-empty -m one && mkdir -p .git/rebase-merge && cd .git/rebase-merge && "
    "printf '  exec echo exec >> {marks}\\n\\tx echo x >> {marks}\\n' > git-rebase-todo && "
    "git rev-parse HEAD > onto && cp onto orig-head && echo refs/heads/main > head-name && touch interactive && "
    ": > done && echo 0 > msgnum && echo 2 > end && echo planted"
)


def continue_as_the_user(root: Path) -> None:
    plain_git(root, "status")
    plain_git(root, "-c", "core.editor=true", "rebase", "--continue")


def test_the_users_rebase_continue_runs_a_planted_exec_line(tmp_path: Path) -> None:
    """The control: the state the attack writes is one git honours (without kimi, it runs)."""
    import subprocess

    root, marks = plain_folder(tmp_path), tmp_path / "marks"
    subprocess.run(["sh", "-c", REBASE_STATE.format(commit=COMMIT, marks=marks)], cwd=root, check=True,
                   capture_output=True)  # fmt: skip
    continue_as_the_user(root)
    assert ran(marks) == ["exec", "x"]


@pytest.mark.parametrize("backend", LOCAL)
def test_kimi_p_a_planted_rebase_runs_no_exec_line_later(
    backend: str, tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    root, marks = plain_folder(tmp_path), tmp_path / "marks"
    plant = REBASE_STATE.format(commit=COMMIT, marks=marks)
    server.add({"tool_calls": [tool_call("Shell", {"command": plant}, "plant")]}, {"text": "ok"})
    proc = run_kimi(["-p", "go", "--sandbox", backend, "--output-format", "json"], root, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (told,) = tool_results(server, 1)
    assert "planted" in told and "rebase-merge/git-rebase-todo" in told, told  # the model is told
    removed = [(r["repository"], r["setting"]) for r in result_json(proc)["git_settings_removed"]]
    assert removed.count((".git", "rebase-merge/git-rebase-todo")) == 2, removed
    continue_as_the_user(root)
    assert ran(marks) == []
    assert (root / ".git" / "HEAD").exists()


@pytest.mark.parametrize("backend", LOCAL)
def test_kimi_p_a_rebase_stopped_in_a_command_is_continued_by_the_user(
    backend: str, tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    """A real `git rebase -i` that stops at `break`: its picks stay, and the user's --continue replays them."""
    root = plain_folder(tmp_path)
    work = (
        f"git init -q -b main && git add notes.txt && {COMMIT} -m one && echo two >> notes.txt && "
        f"{COMMIT} -am two && echo three >> notes.txt && {COMMIT} -am three && "
        "GIT_SEQUENCE_EDITOR='sed -i 1ibreak' git -c user.name=K -c user.email=k@x rebase -q -i HEAD~2; "
        "git status | head -2"
    )
    server.add({"tool_calls": [tool_call("Shell", {"command": work}, "rebase")]}, {"text": "ok"})
    proc = run_kimi(["-p", "go", "--sandbox", backend, "--output-format", "json"], root, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (told,) = tool_results(server, 1)
    assert "rebase in progress" in told, told
    assert result_json(proc)["git_settings_removed"] == []
    continue_as_the_user(root)
    assert not (root / ".git" / "rebase-merge").exists()
    assert (root / "notes.txt").read_text() == "one\ntwo\nthree\n"
