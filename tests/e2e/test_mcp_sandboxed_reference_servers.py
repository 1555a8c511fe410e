"""The reference MCP servers work sandboxed (issue 41, build item 6): filesystem, memory, everything, time and git
(where installed), all in the user's ~/.kimi/mcp.json with nothing but what each needs, through a whole `kimi -p`
on bwrap and on landlock. Each tool call does real work: the filesystem server reads the read-only workspace,
memory writes its graph into its own ~/.kimi/mcp/memory/ (its default file lies in its install, which it may
only read), git reads the repository's status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mcp_support import npm_server, pypi_server
from sandbox_fixtures import backends

from scripted_server import ScriptedModelServer
from support import run_kimi, tool_call, tool_results

BACKENDS = [b for b in backends() if b in ("bwrap", "landlock")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_reference_servers_work_in_the_sandbox(
    backend: str, repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    memory_file = home / ".kimi" / "mcp" / "memory" / "memory.jsonl"
    servers = {
        "filesystem": {"command": npm_server("mcp-server-filesystem"), "args": [str(repo)]},
        "memory": {"command": npm_server("mcp-server-memory"), "env": {"MEMORY_FILE_PATH": str(memory_file)}},
        "everything": {"command": npm_server("mcp-server-everything")},
        "time": {"command": pypi_server("mcp-server-time")},
    }
    calls = [
        tool_call("mcp__filesystem__read_text_file", {"path": str(repo / "calc.py")}, "fs"),
        tool_call("mcp__memory__create_entities", {"entities": [
            {"name": "calc", "entityType": "module", "observations": ["adds badly"]}]}, "mem"),
        tool_call("mcp__everything__echo", {"message": "sandboxed"}, "echo"),
        tool_call("mcp__time__get_current_time", {"timezone": "UTC"}, "time"),
    ]  # fmt: skip
    if shutil.which("mcp-server-git"):
        servers["git"] = {"command": pypi_server("mcp-server-git"), "args": ["--repository", str(repo)]}
        calls.append(tool_call("mcp__git__git_status", {"repo_path": str(repo)}, "git"))
    for server_config in servers.values():
        server_config["startup_timeout"] = 60
    (home / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (home / ".kimi" / "config.toml").open("a").write("\n[mcp]\nstartup_timeout = 90\n")
    server.add({"tool_calls": calls}, {"text": "done"})
    proc = run_kimi(["-p", "use them", "--yolo", "--sandbox", backend], repo, env, server, timeout=180)
    assert proc.returncode == 0, proc.stderr
    results = tool_results(server, 1)
    assert len(results) == len(calls), (results, proc.stderr)
    fs, mem, echo, now = results[:4]
    assert "return a - b" in fs, fs
    assert "calc" in mem and "adds badly" in memory_file.read_text(), mem
    assert "sandboxed" in echo, echo
    assert "UTC" in now or "datetime" in now, now
    if "git" in servers:
        assert "On branch main" in results[4] or "main" in results[4], results[4]
    assert "not available" not in proc.stderr, proc.stderr
