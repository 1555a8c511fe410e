"""Undo that cannot leave the workspace, and snapshots that never fail silently.

A link flipping during snapshots and restores (150 rounds, in-process) never makes a restore write or delete
outside, and never puts outside bytes into a snapshot; a nested repository (`git init empty`,
`vendor/lib/.git`) or a broken `.git` file is left out and later snapshots keep working; a snapshot that
fails is told as a notice, logged, and shown by `kimi undo --list` and `kimi undo`."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

from swapper import start_swapper

from kimi_cli.hostsafe import fs as safe_fs
from kimi_cli.session.undo.shadow import CheckpointError, FileChange, ShadowRepo
from kimi_cli.util.paths import workspace_key

from scripted_server import ScriptedModelServer
from support import git, run_kimi, tool_call

OUTSIDE = "OUTSIDE-BYTES-5d1e"
INSIDE = "inside-bytes-00000"


def outside_state(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir())}


def flipping_workspace(tmp_path: Path, rounds: int) -> tuple[Path, Path]:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    for i in range(20):
        # Same sizes inside and out, as an attacker would choose: git then sees no short read to fail on.
        (ws / "d" / f"f{i}.txt").write_text(f"{INSIDE} {i}\n")
        (elsewhere / f"f{i}.txt").write_text(f"{OUTSIDE} {i}\n")
    for i in range(rounds):  # what a restore would delete if it went through the link
        (elsewhere / f"new{i}.txt").write_text(f"{OUTSIDE} new\n")
    (ws / "swap").symlink_to(elsewhere)
    return ws, elsewhere


def agent_edits(root_fd: int, i: int) -> None:
    """A new file, a deleted one and an edited one under d/, each skipped when d is the link at that moment."""
    with contextlib.suppress(OSError):
        safe_fs.write_atomic_at(root_fd, f"d/new{i}.txt", b"made by the agent\n")
    with contextlib.suppress(OSError):
        safe_fs.remove_at(root_fd, f"d/f{i % 20}.txt", prune=False)
    with contextlib.suppress(OSError):
        safe_fs.write_atomic_at(root_fd, f"d/f{(i + 1) % 20}.txt", b"edited\n")


def test_restores_under_a_flipping_link_never_write_delete_or_snapshot_outside(tmp_path: Path) -> None:
    # At least 150 restores, and on until 30 snapshots got through the race (a loaded machine fails more of
    # them: each failure is reported and harmless, but the claim needs snapshots that succeeded under it).
    least, most, wanted = 150, 600, 30
    ws, elsewhere = flipping_workspace(tmp_path, most)
    before = outside_state(elsewhere)
    shadow = ShadowRepo(ws, home=tmp_path / "home")
    base = shadow.snapshot()
    trees = {base}
    restored = failed = reached_outside = corrected = 0
    swapper = start_swapper(ws / "d", ws / "swap", relink_to=elsewhere)
    try:
        for i in range(most):
            if i >= least and i - failed >= wanted:
                break
            with contextlib.suppress(OSError):
                reached_outside += OUTSIDE in (ws / "d" / "f0.txt").read_text()  # a naive read: the race is live
            with safe_fs.rooted(ws) as root_fd:  # the "agent's" own edits never go through a link either
                agent_edits(root_fd, i)
            # What undo would do: back to the snapshot from before the swapper, changes from a fresh one.
            changes = [FileChange("D", f"d/new{i}.txt"), FileChange("M", f"d/f{i % 20}.txt"),
                       FileChange("M", f"d/f{(i + 1) % 20}.txt")]  # fmt: skip
            try:
                now = shadow.snapshot()
                trees.add(now)
                corrected += len(shadow.last_corrected)
                changes = shadow.changes(now, base)
            except CheckpointError:
                failed += 1
            shadow.restore(base, changes)
            restored += 1
    finally:
        swapper.kill()
        swapper.wait(timeout=10)
    assert reached_outside > 0, "the swapper never made a naive read land outside"
    assert restored >= least
    assert outside_state(elsewhere) == before, "a restore wrote or deleted outside the workspace"
    assert restored - failed >= wanted, f"only {restored - failed} of {restored} snapshots succeeded"
    assert corrected > 0, "no snapshot ever needed its no-follow check: the race did not reach git"
    for tree in trees:  # no snapshot holds bytes read through the link
        found = subprocess.run(
            ["git", "--git-dir", str(shadow.git_dir), "grep", "-l", OUTSIDE, tree], capture_output=True, text=True
        )
        assert not found.stdout.strip(), f"snapshot {tree} holds outside bytes: {found.stdout[:300]}"


def test_after_the_flipping_a_plain_undo_still_restores(tmp_path: Path) -> None:
    ws, _ = flipping_workspace(tmp_path, 3)
    shadow = ShadowRepo(ws, home=tmp_path / "home")
    base = shadow.snapshot()
    (ws / "d" / "f1.txt").unlink()
    (ws / "d" / "extra" / "deep").mkdir(parents=True)
    (ws / "d" / "extra" / "deep" / "x.txt").write_text("new\n")
    (ws / "d" / "f2.txt").write_text("changed\n")
    shadow.restore(base)
    assert (ws / "d" / "f1.txt").read_text() == f"{INSIDE} 1\n" and (ws / "d" / "f2.txt").read_text() == f"{INSIDE} 2\n"
    assert not (ws / "d" / "extra").exists()  # emptied folders go too
    assert (ws / "swap").is_symlink() and shadow.last_not_restored == []


def test_a_restore_never_follows_a_folder_that_became_a_link(tmp_path: Path) -> None:
    ws, elsewhere = flipping_workspace(tmp_path, 3)
    before = outside_state(elsewhere)
    shadow = ShadowRepo(ws, home=tmp_path / "home")
    base = shadow.snapshot()
    (ws / "d" / "new0.txt").write_text("agent\n")
    (ws / "d" / "f3.txt").write_text("agent edit\n")
    now = shadow.snapshot()
    changes = shadow.changes(now, base)  # what undo would do: delete d/new0.txt, rewrite d/f3.txt
    shutil.rmtree(ws / "d")
    (ws / "d").symlink_to(elsewhere)  # flipped after the plan was made
    shadow.restore(base, changes)
    assert outside_state(elsewhere) == before
    assert {p for p, _ in shadow.last_not_restored} == {"d/new0.txt", "d/f3.txt"}


def test_nested_and_broken_repositories_are_left_out_and_snapshots_keep_working(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    git(ws, "init", "-q", "empty")  # no commit: git add of the workspace fails outright on it
    (ws / "vendor" / "lib").mkdir(parents=True)
    git(ws / "vendor" / "lib", "init", "-q")
    (ws / "vendor" / "lib" / "v.py").write_text("V = 1\n")
    git(ws / "vendor" / "lib", "add", ".")
    git(ws / "vendor" / "lib", "commit", "-q", "-m", "v")
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").write_text("gitdir: /nowhere/at/all\n")  # a broken .git file
    (ws / "sub" / "s.txt").write_text("s\n")
    shadow = ShadowRepo(ws, home=tmp_path / "home")
    base = shadow.snapshot()
    assert sorted(shadow.last_nested) == ["empty", "vendor/lib"]
    (ws / "a.txt").unlink()
    (ws / "sub" / "s.txt").unlink()
    git(ws, "init", "-q", "later")  # and one more, mid-session
    now = shadow.snapshot()
    assert {(c.status, c.path) for c in shadow.changes(base, now)} == {("D", "a.txt"), ("D", "sub/s.txt")}
    shadow.restore(base)
    assert (ws / "a.txt").read_text() == "a\n" and (ws / "sub" / "s.txt").read_text() == "s\n"
    assert (ws / "vendor" / "lib" / "v.py").read_text() == "V = 1\n" and (ws / "later" / ".git").is_dir()


def test_git_init_empty_then_a_deleted_file_is_still_undone(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "git init -q empty"}, "sh1")]},
        {"tool_calls": [tool_call("Shell", {"command": "rm README.md"}, "sh2")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "set up and clean"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert not (repo / "README.md").exists() and (repo / "empty" / ".git").is_dir()
    listing = run_kimi(["undo", "--list"], repo, env)
    assert "not covered (nested repository): empty" in listing.stdout
    assert "failed" not in listing.stdout
    undo = run_kimi(["undo", "--yes"], repo, env)
    assert undo.returncode == 0, undo.stderr
    assert (repo / "README.md").read_text() == "# calc\n"


def test_a_snapshot_that_fails_is_told_and_listed_not_silent(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    shadow_dir = home / ".kimi" / "checkpoints" / workspace_key(repo.resolve())
    shadow_dir.parent.mkdir(parents=True, exist_ok=True)
    shadow_dir.write_text("not a repository\n")  # snapshots cannot be stored
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "a.txt", "content": "x\n"}, "w1")]}, {"text": "ok"})
    proc = run_kimi(["-p", "write", "--output-format", "stream-json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "checkpoint before step 1 failed, so undo cannot cover that step" in proc.stdout
    listing = run_kimi(["undo", "--list"], repo, env)
    assert "snapshot before step 1 failed" in listing.stdout and "snapshot after step 1 failed" in listing.stdout
    undo = run_kimi(["undo"], repo, env)
    assert undo.returncode == 1 and "2 snapshot(s) of this session failed" in undo.stderr

    shadow_dir.unlink()  # the legitimate case beside it: snapshots work again, and undo works
    server.add({"tool_calls": [tool_call("WriteFile", {"path": "b.txt", "content": "y\n"}, "w2")]}, {"text": "ok"})
    assert run_kimi(["-p", "write again"], repo, env, server).returncode == 0
    time.sleep(0.01)
    undo = run_kimi(["undo", "--yes"], repo, env)
    assert undo.returncode == 0, undo.stderr
    assert not (repo / "b.txt").exists()
