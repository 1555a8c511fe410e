"""A file lease cannot hide a planted repository setting from the guard, nor stall kimi's host git.

The attack: a background task ran `git init sub`, set `core.fsmonitor`, and took a write lease
(fcntl F_SETLEASE) on `sub/.git/config`, which needs no more than owning the file. Every open of a leased
file with O_NONBLOCK (the guard's no-follow reads) failed with EAGAIN, the failure was swallowed as if the
file were clean and the git dir's stamp kept, so it was never read again: after the task ended the plant
stayed, and the user's `git status` ran it. A blocking open (host git: kimi's Git tool, checkpoints, the
user's own git) waited 45 s a leased file. Now the seccomp filter every backend shares refuses F_SETLEASE
(kimi_cli/kernel/restrict.py), and a file the guard cannot read or remove is reported ("could NOT be
checked") and its git dir read again after every command (kimi_cli/sandbox/guard/repo_scrub.py). The
legitimate use stays: a background task that makes a repository with ordinary settings keeps them, and the
user's git works there afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, backends, make_rig

from scripted_server import ScriptedModelServer
from support import plain_git, ran, result_json, run_kimi, tool_call, tool_results

SPAWNERS = [b for b in backends() if b != "docker"]  # background tasks run on bwrap and landlock
# A lease on each named file, held for `secs` seconds (SIGIO, sent when kimi's open breaks it, ignored); the
# file `leased` says they are in place (WAIT waits for it: python's start takes seconds on a loaded machine).
WAIT = "for i in $(seq 300); do [ -e leased ] && break; sleep 0.1; done"
GONE = "for i in $(seq 300); do [ -e leased ] || break; sleep 0.1; done; sleep 1"  # the holder has exited
HOLD = (
    "python3 -c 'import fcntl, os, signal, sys, time\n"
    "signal.signal(signal.SIGIO, signal.SIG_IGN)\n"
    "fds = [os.open(f, os.O_RDONLY) for f in sys.argv[2:]]\n"
    'try: [fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK) for fd in fds]; print("LEASED", flush=True)\n'
    'except OSError as exc: print("LEASE REFUSED", exc.errno, flush=True)\n'
    'open("leased", "w").close()\n'
    'time.sleep(float(sys.argv[1])); os.unlink("leased")\' {secs} {files}'
)
PLANT = (
    "git init -q sub && git -C sub config core.fsmonitor 'echo fsmonitor >> {marks}' && "
    "printf '#!/bin/sh\\necho hook >> {marks}\\n' > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit"
)


@pytest.fixture(params=SPAWNERS)
def spawner_rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    the_rig, _ = make_rig(tmp_path, request.param)
    yield the_rig
    the_rig.close()


def users_own_git(root: Path) -> None:
    plain_git(root, "status")
    plain_git(root, "commit", "-q", "--allow-empty", "-m", "user")


def test_a_lease_is_refused_and_the_planted_config_and_hook_are_taken_out(spawner_rig: Rig, tmp_path: Path) -> None:
    rig, marks = spawner_rig, tmp_path / "marks"
    plant = PLANT.format(marks=marks)
    task = rig.background(f"{plant} && " + HOLD.format(secs=6, files="sub/.git/config sub/.git/hooks/pre-commit"))
    rig.run(WAIT)
    assert "LEASE REFUSED 1" in rig.task_output(task)  # EPERM from the seccomp filter, on every backend
    rig.run("true")
    rig.wait_task(task, 30)
    rig.run("true")
    sub = rig.ws / "sub"
    assert "fsmonitor" not in (sub / ".git" / "config").read_text()
    assert not (sub / ".git" / "hooks" / "pre-commit").exists()
    users_own_git(sub)
    assert ran(marks) == []


def test_a_background_task_keeps_an_ordinary_repository_it_makes(spawner_rig: Rig, tmp_path: Path) -> None:
    rig = spawner_rig
    work = "git init -q sub && git -C sub config user.name Kimi && git -C sub config core.autocrlf false && echo made"
    task = rig.background(work + " && " + HOLD.format(secs=4, files="sub/.git/HEAD"))
    rig.run(WAIT)
    assert "made" in rig.task_output(task)
    rig.wait_task(task, 30)
    after = rig.run("git -C sub config user.name")
    assert after.output.startswith("exit code: 0") and "Kimi" in after.output, after.output
    assert "could NOT" not in after.output and "removed" not in after.output
    plain_git(rig.ws / "sub", "status")


@pytest.mark.parametrize("backend", SPAWNERS)
def test_kimi_p_a_lease_on_a_planted_config_leaves_nothing_for_the_users_git(
    backend: str, tmp_path: Path, env: dict, server: ScriptedModelServer
) -> None:
    root, marks = tmp_path / "plain", tmp_path / "marks"
    root.mkdir()
    task = PLANT.format(marks=marks) + " && " + HOLD.format(secs=5, files="sub/.git/config")
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": task, "background": True}, "bg")]},
        {"tool_calls": [tool_call("Shell", {"command": WAIT + "; echo while-leased"}, "fg")]},
        {"tool_calls": [tool_call("Shell", {"command": GONE + "; echo after"}, "fg2")]},
        {"text": "ok"},
    )
    proc = run_kimi(["-p", "go", "--sandbox", backend, "--output-format", "json"], root, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "while-leased" in tool_results(server, 2)[-1]
    removed = {(r["repository"], r["setting"]) for r in result_json(proc)["git_settings_removed"]}
    assert ("sub/.git", "core.fsmonitor") in removed and ("sub/.git", "hooks/pre-commit") in removed, removed
    users_own_git(root / "sub")
    assert ran(marks) == []


def test_a_lease_attempt_does_not_stall_host_git(spawner_rig: Rig) -> None:
    """Before, a lease on three changed files held the host's `git diff` (kimi's Git tool, the user's own)
    for 45 s a file (the kernel's lease-break-time): 135 s here."""
    import subprocess
    import time

    rig = spawner_rig
    for name in ("a.txt", "b.txt", "c.txt"):
        (rig.ws / name).write_text("one\n")
    plain_git(rig.ws, "add", "a.txt", "b.txt", "c.txt")
    plain_git(rig.ws, "commit", "-q", "-m", "files")
    rig.run("for f in a b c; do echo two >> $f.txt; done")
    task = rig.background(HOLD.format(secs=20, files="a.txt b.txt c.txt"))
    rig.run(WAIT)
    assert "LEASE REFUSED 1" in rig.task_output(task)
    began = time.monotonic()
    diff = subprocess.run(["git", "diff", "--stat"], cwd=rig.ws, capture_output=True, text=True, timeout=120)
    assert time.monotonic() - began < 20 and "3 files changed" in diff.stdout, diff
