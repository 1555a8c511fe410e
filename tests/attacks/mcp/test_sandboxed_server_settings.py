"""An MCP server's settings: each field is classified (may a folder's file set it?), and `"sandbox": false` is the
user's alone, in `kimi mcp list`, `kimi mcp add` and a session (tests/attacks/mcp/test_sandboxed_mcp_server.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcp_support import write_config

from support import kimi_executable, trust_folder


def test_every_mcp_server_field_is_classified_and_nothing_else() -> None:
    from kimi_cli.extensions.mcp.config import ServerConfig
    from kimi_cli.hostsafe.trust_rules import MCP_SERVER_FIELDS

    assert set(MCP_SERVER_FIELDS) == set(ServerConfig.model_fields)
    assert set(MCP_SERVER_FIELDS.values()) <= {"folder", "user"}
    assert MCP_SERVER_FIELDS["sandbox"] == "user"


def kimi(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "NO_COLOR": "1"}
    return subprocess.run([*kimi_executable(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_mcp_list_shows_where_each_server_runs_and_a_folders_sandbox_false_is_refused(repo: Path, home: Path) -> None:
    server = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}
    (home / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": {
        "mine": {**server, "sandbox": False}, "plain": server, "api": {**server, "network": True}}}))  # fmt: skip
    write_config(repo, {"theirs": {**server, "sandbox": False, "workspace": "write"}})
    trust_folder(repo, home)
    proc = kimi(["mcp", "list"], repo, home)
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.strip()}
    assert '[on the host: "sandbox": false]' in lines["mine"], proc.stdout
    assert "[sandboxed (" in lines["plain"] and "workspace read-only, no network)]" in lines["plain"], proc.stdout
    assert "workspace read-only, network)]" in lines["api"], proc.stdout
    assert "[sandboxed (" in lines["theirs"] and "workspace writable, no network)]" in lines["theirs"], proc.stdout
    assert "MCP server 'theirs': \"sandbox\" is ignored" in proc.stderr, proc.stderr


def test_mcp_add_writes_the_sandbox_settings_and_no_sandbox_only_in_the_users_file(repo: Path, home: Path) -> None:
    refused = kimi(["mcp", "add", "x", "--no-sandbox", "--", "true"], repo, home)
    assert refused.returncode == 2 and "--scope user" in refused.stderr
    assert not (repo / ".kimi" / "mcp.json").exists()
    added = kimi(["mcp", "add", "y", "--network", "--workspace-write", "--pass-env", "FOO", "--", "true"], repo, home)
    assert added.returncode == 0, added.stderr
    entry = json.loads((repo / ".kimi" / "mcp.json").read_text())["mcpServers"]["y"]
    assert entry == {"command": "true", "args": [], "network": True, "workspace": "write", "pass_env": ["FOO"]}
    mine = kimi(["mcp", "add", "z", "--scope", "user", "--no-sandbox", "--", "true"], repo, home)
    assert mine.returncode == 0, mine.stderr
    assert json.loads((home / ".kimi" / "mcp.json").read_text())["mcpServers"]["z"]["sandbox"] is False
