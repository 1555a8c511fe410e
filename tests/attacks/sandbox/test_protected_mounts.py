""".kimi and .git inside the workspace: read-only to commands (mounts on bwrap/Docker; on landlock,
restored after each command and reported). Git's links (commondir, alternates, worktree gitdir) included:
a command must not point the repository at a folder it controls. The Git tool's own changes stay.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

import pytest
from sandbox_fixtures import Rig, backends, make_rig, need_probe

from support import git


def test_a_missing_kimi_folder_cannot_be_planted(rig: Rig) -> None:
    result = rig.run("mkdir -p .kimi && echo '[sandbox]' > .kimi/config.toml && echo '{}' > .kimi/mcp.json; ls -a")
    assert not (rig.ws / ".kimi").exists()
    if result.output.startswith("exit code: 0"):  # landlock and the guard: it happened, and was undone
        raise AssertionError(result.output)
    assert ".kimi" in result.output  # the model is told what was put back
    assert rig.run("mkdir -p src && echo ok > src/a.txt && cat src/a.txt").output.startswith("exit code: 0")


@pytest.mark.parametrize("backend", backends())
def test_an_existing_kimi_folder_is_read_only(backend: str, tmp_path: Path) -> None:
    def prepare(ws: Path) -> None:
        (ws / ".kimi").mkdir()
        (ws / ".kimi" / "config.toml").write_text("[shell]\ndefault_timeout = 60\n")

    rig, _ = make_rig(tmp_path, backend, prepare=prepare)
    try:
        before = (rig.ws / ".kimi" / "config.toml").read_bytes()
        result = rig.run("echo 'yolo = true' >> .kimi/config.toml; echo '{\"mcpServers\":{}}' > .kimi/mcp.json;"
                         " cat .kimi/config.toml")  # fmt: skip
        assert (rig.ws / ".kimi" / "config.toml").read_bytes() == before
        assert not (rig.ws / ".kimi" / "mcp.json").exists()
        assert "default_timeout = 60" in result.output  # still readable
    finally:
        rig.close()


@pytest.mark.parametrize("backend", backends())
def test_git_links_cannot_be_pointed_outside(backend: str, tmp_path: Path) -> None:
    def prepare(ws: Path) -> None:  # a repository with a linked worktree, as the session finds it
        git(ws, "commit", "-q", "--allow-empty", "-m", "first")
        git(ws, "worktree", "add", "-q", str(tmp_path / "wt"))

    rig, _ = make_rig(tmp_path, backend, prepare=prepare)
    try:
        gitdir = rig.ws / ".git" / "worktrees" / "wt" / "gitdir"
        before = gitdir.read_text()
        evil = rig.ws / "evil"
        result = rig.run(
            f"mkdir -p {evil}/objects; echo '[core] fsmonitor = /bin/true' > {evil}/config;"
            f" echo {evil} > .git/commondir; echo {evil}/objects > .git/objects/info/alternates;"
            f" echo {evil}/.git > .git/worktrees/wt/gitdir"
        )
        assert not (rig.ws / ".git" / "commondir").exists()
        assert not (rig.ws / ".git" / "objects" / "info" / "alternates").exists()
        assert gitdir.read_text() == before
        if backend == "landlock":  # written, then put back, and the model is told
            assert "commondir" in result.output and "read-only in the sandbox" in result.output
        assert "wt" in git(rig.ws, "worktree", "list")
    finally:
        rig.close()


def test_the_git_tools_commits_survive_and_a_background_writer_is_undone(rig: Rig) -> None:
    git(rig.ws, "commit", "-q", "--allow-empty", "-m", "first")
    config = (rig.ws / ".git" / "config").read_text()
    if rig.shell.tasks is not None:
        task = rig.background(
            "while :; do echo '[core] hooksPath = /tmp/evil' >> .git/config 2>/dev/null; sleep 0.01; done"
        )
        rig.run("sleep 0.3")
        rig.loop.run_until_complete(rig.shell.tasks.stop(task))
    git(rig.ws, "commit", "-q", "--allow-empty", "-m", "by the Git tool")  # on the host, between commands
    head = git(rig.ws, "rev-parse", "HEAD")
    after = rig.run("echo next")
    assert (rig.ws / ".git" / "config").read_text() == config
    assert git(rig.ws, "rev-parse", "HEAD") == head  # the host's commit is kept
    assert "next" in after.output


def test_the_guard_never_follows_a_link_swapped_in_while_it_repairs(rig: Rig) -> None:
    """The guard runs on the host with the user's rights: a race that made it delete or write through a
    link would be a way out. A background task swaps .kimi and .git/hooks with links to a host folder
    while commands keep the guard busy; the host folder is untouched and the workspace is put right."""
    probe = need_probe(rig)
    host = Path(tempfile.mkdtemp(prefix="kimi-attack-victim-", dir="/var/tmp"))
    (host / "victim").write_text("keep me\n")
    (host / "pre-commit.sample").write_text("host file\n")
    try:
        setup = (
            f"mkdir -p .kimi && touch .kimi/victim && ln -sfn {host} kimi-link && ln -sfn {host} hooks-link;"
            " echo evil >> .git/hooks/pre-commit.sample 2>/dev/null;"
        )
        race = f"{probe} swap .kimi kimi-link 0 & {probe} swap .git/hooks hooks-link 0 & sleep 2; kill %1 %2"
        if rig.shell.tasks is not None:
            task = rig.background(setup + race)
            for _ in range(15):
                rig.run("true")
            rig.wait_task(task)
        else:
            rig.run(setup + race)
        rig.run("true")
        assert sorted(p.name for p in host.iterdir()) == ["pre-commit.sample", "victim"]
        assert (host / "victim").read_text() == "keep me\n" and (
            host / "pre-commit.sample"
        ).read_text() == "host file\n"
        for name in ("kimi-link", "hooks-link"):  # where the swapper stopped, a link or the swapped folder
            path = rig.ws / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        rig.run("true")
        assert not (rig.ws / ".kimi").exists() or (rig.backend == "landlock" and not any((rig.ws / ".kimi").iterdir()))
        assert (rig.ws / ".git" / "hooks").is_dir() and not (rig.ws / ".git" / "hooks").is_symlink()
    finally:
        shutil.rmtree(host, ignore_errors=True)
