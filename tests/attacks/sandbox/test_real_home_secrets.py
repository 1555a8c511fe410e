"""The user's real home and XDG folders stay hidden when HOME points elsewhere.

The finding: the hidden table's `~` followed $HOME only. With HOME pointed at another folder (CI runners,
wrappers, `sudo -E`), a `cat` of the real home's ~/.ssh key read it on bwrap and landlock. Now every home
entry is hidden under $HOME and under the password database's home for kimi's uid, and the entries under
~/.config, ~/.local/share, ~/.local/state and ~/.cache also where the XDG variables move those folders.

The key is planted in the real home of whoever runs the tests (root's or kimi-ci's) under a name of its own,
and removed afterwards (with ~/.ssh itself when the test made it).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_fixtures import backends, make_rig, sandbox_flags

from kimi_cli.sandbox.hidden import real_home

from scripted_server import ScriptedModelServer
from support import run_kimi, tool_call, tool_results

MARK = "REAL-HOME-KEY-"


@pytest.fixture
def real_key() -> Iterator[tuple[Path, str]]:
    """A private key file in the real home's .ssh: (its path, its secret text)."""
    home = real_home()
    assert home is not None and home.is_dir(), home
    ssh = home / ".ssh"
    made = not ssh.exists()
    ssh.mkdir(mode=0o700, exist_ok=True)
    secret = MARK + secrets.token_hex(6)
    key = ssh / f"kimi-test-{secrets.token_hex(4)}"
    key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY----- {secret}\n")
    try:
        yield key, secret
    finally:
        key.unlink(missing_ok=True)
        if made:
            shutil.rmtree(ssh, ignore_errors=True)


@pytest.fixture
def xdg() -> Iterator[Path]:
    """XDG folders outside both homes, with a gh token and a keyring in them (under /var/tmp: bwrap's own
    private /tmp would hide a folder under /tmp for the wrong reason)."""
    root = Path(tempfile.mkdtemp(prefix="kimi-xdg-", dir="/var/tmp"))
    os.chmod(root, 0o755)
    (root / "config" / "gh").mkdir(parents=True)
    (root / "config" / "gh" / "hosts.yml").write_text("oauth_token: XDG-GH-TOKEN-31\n")
    (root / "data" / "keyrings").mkdir(parents=True)
    (root / "data" / "keyrings" / "login.keyring").write_text("XDG-KEYRING-32\n")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _reads(key: Path, xdg: Path) -> str:
    return (
        f"cat {key}; cat {xdg}/config/gh/hosts.yml; cat {xdg}/data/keyrings/login.keyring; ls {key.parent}; "
        "echo work > w.txt && cat w.txt"
    )


@pytest.mark.parametrize("backend", backends())
def test_the_real_homes_key_and_the_xdg_folders_are_hidden_when_home_points_elsewhere(
    backend: str, tmp_path: Path, real_key: tuple[Path, str], xdg: Path
) -> None:
    key, secret = real_key
    environ = {"XDG_CONFIG_HOME": str(xdg / "config"), "XDG_DATA_HOME": str(xdg / "data")}
    rig, _ = make_rig(tmp_path, backend, environ=environ)  # HOME is the rig's own folder, not the real home
    try:
        assert Path(rig.shell.sandbox.policy.env["HOME"]) != real_home()  # type: ignore[attr-defined]
        result = rig.run(_reads(key, xdg))
    finally:
        rig.close()
    for leaked in (secret, "XDG-GH-TOKEN-31", "XDG-KEYRING-32"):
        assert leaked not in result.output, result.output
    assert key.name not in result.output.splitlines(), result.output  # not listed either
    assert "work" in result.output and (rig.ws / "w.txt").read_text() == "work\n"


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])  # docker mounts no folder at all
def test_a_workspace_inside_a_moved_xdg_folder_still_works(backend: str, tmp_path: Path) -> None:
    """XDG_CONFIG_HOME holds the workspace (as a home does): its gh entry is hidden, and the workspace is
    still read and written as a whole, new files at its top included (Landlock splits the folder around
    the entry, never the workspace)."""
    (tmp_path / "gh").mkdir()
    (tmp_path / "gh" / "hosts.yml").write_text("XDG-GH-33\n")
    rig, _ = make_rig(tmp_path, backend, environ={"XDG_CONFIG_HOME": str(tmp_path)})
    try:
        result = rig.run(f"cat {tmp_path}/gh/hosts.yml; echo edit > notes.txt && mkdir -p sub && cat notes.txt && ls")
    finally:
        rig.close()
    assert "XDG-GH-33" not in result.output, result.output
    assert "edit" in result.output and "notes.txt" in result.output and "sub" in result.output, result.output


INSIDE_REAL_HOME = """
import json, sys
from pathlib import Path
from kimi_cli.sandbox.policy import build_policy
ws, fake, tmp = map(Path, sys.argv[1:])
policy = build_policy(ws, tmp, environ={"HOME": str(fake), "XDG_CONFIG_HOME": str(ws.parent)})
print(json.dumps({"hidden": [str(h.path) for h in policy.hidden], "roots": list(map(str, policy.home_roots))}))
"""


def test_a_workspace_inside_the_real_home_is_never_hidden(tmp_path: Path) -> None:
    """The real home joins the table; a folder holding the workspace is still never hidden (the _covers
    check), whichever home or XDG folder the entry came from. In a process of its own: a policy notes its
    workspace as sandbox-writable for every later host lookup, and this one's is the real home."""
    home = real_home()
    assert home is not None
    for ws in (home, home / ".config" / "gh" / "project"):
        out = subprocess.run([sys.executable, "-c", INSIDE_REAL_HOME, str(ws), str(tmp_path / "fake"), str(tmp_path)],
                             capture_output=True, text=True, check=True, cwd=tmp_path)  # fmt: skip
        found = json.loads(out.stdout)
        assert not any(ws.is_relative_to(h) for h in map(Path, found["hidden"])), (ws, found)
        assert {str(home), str(tmp_path / "fake")} <= set(found["roots"]), found


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])
def test_kimi_p_cannot_read_the_real_homes_key_with_home_pointed_elsewhere(
    backend: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer, real_key: tuple[Path, str], xdg: Path
) -> None:
    """End to end: kimi runs with HOME at the test's folder (as under a CI runner); the real home holds a key."""
    key, secret = real_key
    env = {**env, "XDG_CONFIG_HOME": str(xdg / "config"), "XDG_DATA_HOME": str(xdg / "data")}
    flags = sandbox_flags(backend, home)
    server.add({"tool_calls": [tool_call("Shell", {"command": _reads(key, xdg)}, "read")]}, {"text": "done"})
    proc = run_kimi(["-p", "go", *flags], repo, env, server, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    (read,) = tool_results(server, 1)
    for leaked in (secret, "XDG-GH-TOKEN-31", "XDG-KEYRING-32"):
        assert leaked not in read, read
    assert key.name not in read.splitlines(), read
    assert "work" in read and (repo / "w.txt").read_text() == "work\n"
