"""A sandboxed MCP server replaces its private tmp (~/.kimi/mcp/<name>/tmp, inside its own writable folder) with a
link to a host folder; on its next start the sandbox's /tmp (bwrap binds it, Landlock grants it) was that folder,
readable and writable, past every hidden path. state_dir now puts a real folder back where a link or file stood.
Run on bwrap and landlock (KIMI_TEST_BACKENDS), as root and as kimi-ci.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from sandbox_fixtures import backends

from kimi_cli.extensions.mcp.config import ServerConfig
from kimi_cli.extensions.mcp.sandboxed import open_backend, server_policy, state_dir


@pytest.fixture
def kimi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMI_HOME", str(tmp_path / "kimi"))
    return tmp_path / "kimi"


def run_in_server_sandbox(backend: str, ws: Path, line: str) -> subprocess.CompletedProcess[str]:
    policy = server_policy("probe", ServerConfig(command="true"), ws, environ={"PATH": "/usr/bin:/bin"})
    sandbox = open_backend(backend, policy)
    try:
        argv, env, preexec, fds = sandbox.spawn_spec(line)
        return subprocess.run(argv, env=env, preexec_fn=preexec, pass_fds=fds, capture_output=True, text=True,
                              timeout=60, cwd=ws)  # fmt: skip
    finally:
        sandbox.close_sync()


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])
def test_a_link_planted_as_its_tmp_reaches_no_host_folder(kimi_home: Path, tmp_path: Path, backend: str) -> None:
    ws, target = tmp_path / "ws", tmp_path / "host-folder"
    ws.mkdir()
    target.mkdir()
    (target / "secret").write_text("HOSTSECRET\n")
    tmp = state_dir("probe") / "tmp"
    tmp.rmdir()
    tmp.symlink_to(target)  # what the server could do in its own folder on its first run
    result = run_in_server_sandbox(backend, ws, 'cat /tmp/secret "$TMPDIR/secret"; echo planted > "$TMPDIR/w"')
    assert "HOSTSECRET" not in result.stdout
    assert not (target / "w").exists()
    assert tmp.is_dir() and not tmp.is_symlink()


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])
def test_its_tmp_keeps_what_it_wrote_there(kimi_home: Path, tmp_path: Path, backend: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    first = run_in_server_sandbox(backend, ws, 'echo kept > "$TMPDIR/note"')
    assert first.returncode == 0, first.stderr
    again = run_in_server_sandbox(backend, ws, 'cat "$TMPDIR/note"')
    assert again.stdout.strip() == "kept", again.stderr
    assert os.stat(state_dir("probe") / "tmp").st_mode & 0o077 == 0
