"""kimi's own reads of workspace content on the host (the pack, AGENTS.md, change notes, Grep's rg) never
follow a link out of the workspace; links inside are listed as links; hostile shapes (a folder 1,100 deep)
do not crash `kimi pack` or `kimi -p`. Each attack sits beside the legitimate use."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kimi_cli.context.agents_md import load_agents_md
from kimi_cli.context.packer import RepoPacker
from kimi_cli.context.watch import PackWatcher

from scripted_server import ScriptedModelServer
from support import git, run_kimi

SECRET = "OUTSIDE-SECRET-91c4e2"


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A folder outside the workspace, as ~/.ssh or /etc would be."""
    out = tmp_path / "elsewhere"
    out.mkdir()
    (out / "a.py").write_text(f"KEY = '{SECRET}'\n")
    (out / "only_outside.py").write_text(f"TOKEN = '{SECRET}'\n")
    (out / "id_rsa").write_text(f"-----BEGIN {SECRET}-----\n")
    return out


def pack_text(root: Path) -> str:
    return RepoPacker(root).pack("", 50_000, use_cache=False, persist=False).text


def test_a_symlinked_folder_the_index_lists_is_not_packed(repo: Path, elsewhere: Path) -> None:
    (repo / "inc").mkdir()
    (repo / "inc" / "a.py").write_text("INSIDE = 1\n")
    (repo / "lib").symlink_to(elsewhere)  # tracked as a link
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "inc and lib")
    legit = pack_text(repo)
    assert "INSIDE = 1" in legit and "lib S (symlink" in legit and SECRET not in legit

    (repo / "inc" / "a.py").unlink()
    (repo / "inc").rmdir()
    (repo / "inc").symlink_to(elsewhere)  # the index still lists inc/a.py
    text = pack_text(repo)
    assert SECRET not in text
    assert "only_outside" not in text  # not even named
    assert "def add" in text  # the rest of the repository is packed as before


def test_a_symlinked_folder_outside_git_is_listed_as_a_link_not_entered(tmp_path: Path, elsewhere: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "main.py").write_text("print('hi')\n")
    (root / "inc").symlink_to(elsewhere)
    (root / "docs").symlink_to("main.py")  # a link inside: listed as a link too
    text = pack_text(root)
    assert "print('hi')" in text
    assert "inc S (symlink" in text and "docs S (symlink" in text
    assert SECRET not in text and "only_outside" not in text


def test_a_symlinked_agents_md_pointing_outside_is_not_read(tmp_path: Path, elsewhere: Path) -> None:
    root = tmp_path / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "AGENTS.md").symlink_to(elsewhere / "id_rsa")
    assert SECRET not in load_agents_md(root)

    (root / "AGENTS.md").unlink()
    (root / "docs" / "agents.md").write_text("Run pytest before you finish.\n")
    (root / "AGENTS.md").symlink_to("docs/agents.md")  # a link that stays inside is followed
    assert "Run pytest before you finish." in load_agents_md(root)


def test_a_custom_agent_file_linked_outside_is_not_read(tmp_path: Path, elsewhere: Path) -> None:
    from kimi_cli.agent.subagents.kinds import custom_kinds

    root = tmp_path / "proj"
    (root / ".kimi" / "agents").mkdir(parents=True)
    (elsewhere / "stolen.md").write_text(f"---\nname: stolen\n---\n{SECRET}\n")
    (root / ".kimi" / "agents" / "stolen.md").symlink_to(elsewhere / "stolen.md")
    (root / ".kimi" / "agents" / "review.md").write_text("---\nname: review\ndescription: reviews\n---\nReview it.\n")
    kinds = custom_kinds(root)
    assert "review" in kinds and kinds["review"].prompt == "Review it."
    assert "stolen" not in kinds and all(SECRET not in k.prompt for k in kinds.values())


def test_the_change_note_after_a_swap_to_a_link_carries_no_outside_content(repo: Path, elsewhere: Path) -> None:
    watcher = PackWatcher(repo, {"calc.py": (repo / "calc.py").read_text()})
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    legit = watcher.note()
    assert "return a + b" in legit

    (repo / "calc.py").unlink()
    (repo / "calc.py").symlink_to(elsewhere / "id_rsa")  # `ln -sf ~/.ssh/id_rsa calc.py` from the sandbox
    note = watcher.note()
    assert "calc.py" in note and SECRET not in note


def test_rg_under_the_read_confinement_cannot_read_outside(tmp_path: Path, elsewhere: Path) -> None:
    from functools import partial

    from kimi_cli.hostsafe.confined_reader import confined_runner
    from kimi_cli.kernel.restrict import landlock_abi
    from kimi_cli.tools.ripgrep import find_rg

    if landlock_abi() < 1:
        pytest.skip(
            "this kernel has no Landlock: Grep checks rg's lines instead (tests/attacks/files/test_link_races.py)"
        )
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "inside.txt").write_text(f"inside {SECRET[:8]}\n")
    (ws / "out").symlink_to(elsewhere)
    rg = find_rg()
    runner = confined_runner(ws, rg)
    assert runner is not None, "Landlock is here, so Grep must confine rg"
    argv = [rg, "-n", "--no-config", "-L", SECRET[:8], "."]  # -L: follow links, so only the kernel stops it
    found = runner.call(partial(subprocess.run, argv, cwd=ws, capture_output=True, text=True))
    assert "inside.txt:1:inside" in found.stdout  # the workspace itself is searched
    assert SECRET not in found.stdout
    assert SECRET in subprocess.run(argv, cwd=ws, capture_output=True, text=True).stdout  # unconfined, it would
    assert SECRET in (elsewhere / "id_rsa").read_text()  # and kimi's own threads are not confined


def make_deep(root: Path, depth: int) -> None:
    """A folder nested `depth` deep, made from descriptors (no recursion, no long path strings)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open("deep.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"X = 1\n")
        os.close(leaf)
    finally:
        os.close(fd)


def remove_deep(root: Path) -> None:
    """Take the chain root/d/d/... apart one level at a time with short paths (rmtree recurses and would fail)."""
    while (root / "d").is_dir():
        inner = root / "d" / "d"
        if not inner.is_dir():
            shutil.rmtree(root / "d")
            return
        os.rename(inner, root / "lifted")
        shutil.rmtree(root / "d")  # what is left there is shallow now
        os.rename(root / "lifted", root / "d")


@pytest.mark.parametrize("with_git", [False, True])
def test_a_folder_1100_deep_does_not_crash_kimi_pack_or_kimi_p(
    tmp_path: Path, env: dict, server: ScriptedModelServer, with_git: bool
) -> None:
    root = tmp_path / "deep"
    root.mkdir()
    (root / "top.py").write_text("def top():\n    return 1\n")
    make_deep(root, 1100)
    try:
        if with_git:
            git(root, "init", "-q")
        pack = run_kimi(["pack", "--format", "text"], root, env)
        assert pack.returncode == 0, pack.stderr[-2000:]
        assert "def top()" in pack.stdout and "RecursionError" not in pack.stderr
        server.add({"text": "done"})
        run = run_kimi(["-p", "look around"], root, env, server)
        assert run.returncode == 0, run.stderr[-2000:]
        assert "def top()" in server.requests[0]["messages"][0]["content"]
    finally:
        remove_deep(root)
