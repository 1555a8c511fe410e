"""A sandboxed MCP server reads a state folder made after it started: another server's, started a moment later
(a session starts its servers side by side), or ~/.kimi's files when ~/.kimi held nothing else yet.

Landlock only grants: the server's hidden table named the siblings that existed, so a ~/.kimi/mcp holding only
its own folder was granted whole, and a later folder in it was readable. ~/.kimi/mcp now always holds an entry
the table hides (state_dir's marker), so Landlock grants its children one by one. Run on bwrap and landlock.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from sandbox_fixtures import backends

from kimi_cli.extensions.mcp.config import ServerConfig
from kimi_cli.extensions.mcp.sandboxed import open_backend, server_policy, state_dir


@pytest.fixture
def kimi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMI_HOME", str(tmp_path / "kimi"))
    return tmp_path / "kimi"


@pytest.mark.parametrize("backend", [b for b in backends() if b != "docker"])
def test_a_running_server_reads_no_folder_made_after_it_started(kimi_home: Path, tmp_path: Path, backend: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = server_policy("first", ServerConfig(command="true"), ws, environ={"PATH": "/usr/bin:/bin"})
    sandbox = open_backend(backend, policy)
    later, own = kimi_home / "mcp" / "second" / "token", state_dir("first") / "note"
    line = f"sleep 2; cat {later} {kimi_home}/config.toml; echo mine > {own}; cat {own}"
    try:
        argv, env, preexec, fds = sandbox.spawn_spec(line)
        proc = subprocess.Popen(argv, env=env, preexec_fn=preexec, pass_fds=fds, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(0.5)
        state_dir("second")
        later.write_text("SECOND-SERVER-TOKEN\n")
        (kimi_home / "config.toml").write_text("api_key = 'sk-written-later'\n")
        out, err = proc.communicate(timeout=60)
    finally:
        sandbox.close_sync()
    assert "SECOND-SERVER-TOKEN" not in out and "sk-written-later" not in out
    assert "mine" in out, err  # its own folder still takes what it writes
