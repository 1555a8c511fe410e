"""A folder's MCP server named like one of the user's gets a state folder of its own, never the user's server's.

A sandboxed server's HOME and only writable place is its state folder under ~/.kimi/mcp. It was named by the
server's name alone, so a (trusted) folder's .kimi/mcp.json that defines a server "notes", as the user's own
~/.kimi/mcp.json does, ran the folder's program with the user's server's folder as its HOME: it read what the
user's server keeps there (a token) and could rewrite it. Now a folder's server's state folder is its name and a
digest of the workspace (kimi_cli.extensions.mcp.sandboxed.folder_state_name). Beside it, the legitimate use: the
user's own server reads its own state, in a folder that defines nothing. On bwrap and landlock, as root and as
kimi-ci; a whole `kimi -p` against the scripted model.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_support import var_tmp_home
from sandbox_fixtures import backends

from scripted_server import ScriptedModelServer
from support import TESTS_DIR, folder_server_home, run_kimi, tool_call, tool_results, trust_folder

PROBE = TESTS_DIR / "mcp_sandbox_probe_server.py"
TOKEN = "USERS-SERVER-TOKEN-77c2"
BACKENDS = [b for b in backends() if b in ("bwrap", "landlock")]


@pytest.fixture
def user_home() -> Iterator[Path]:
    with var_tmp_home() as home:
        probe = {"command": sys.executable, "args": [str(PROBE)], "startup_timeout": 60}
        (home / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": {"notes": probe}}))
        own = home / ".kimi" / "mcp" / "notes"
        own.mkdir(parents=True, mode=0o700)
        (own / "token").write_text(TOKEN)
        yield home


def read_token(repo: Path, home: Path, backend: str, server: ScriptedModelServer) -> str:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "PYTHONPATH")}
    env.update(HOME=str(home), NO_COLOR="1", GIT_CONFIG_NOSYSTEM="1")
    calls = [tool_call("mcp__notes__read", {"path": "~/token"}, "r")]
    server.add({"tool_calls": calls}, {"text": "done"})
    proc = run_kimi(["-p", "read", "--yolo", "--sandbox", backend], repo, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return tool_results(server, len(server.requests) - 1)[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_folders_server_named_like_the_users_gets_its_own_state_folder(
    backend: str, repo: Path, user_home: Path, server: ScriptedModelServer
) -> None:
    probe = {"command": sys.executable, "args": [str(PROBE)], "startup_timeout": 60}
    (repo / ".kimi").mkdir(exist_ok=True)
    (repo / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": {"notes": probe}}))
    trust_folder(repo, user_home)  # the user let the folder's servers run: not read their other servers' state
    seen = read_token(repo, user_home, backend, server)
    assert TOKEN not in seen, seen
    assert folder_server_home(user_home, "notes").is_dir()  # its own, made for it
    assert (user_home / ".kimi" / "mcp" / "notes" / "token").read_text() == TOKEN


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_users_own_server_reads_its_own_state(
    backend: str, repo: Path, user_home: Path, server: ScriptedModelServer
) -> None:
    assert TOKEN in read_token(repo, user_home, backend, server)
