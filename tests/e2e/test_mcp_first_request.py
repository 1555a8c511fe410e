"""MCP servers are ready for the first request, and tools that come later keep the cached prefix.

Servers start beside the pack and the first request waits for them up to `[mcp] startup_timeout` (5 s), so
the reference servers' tools are all in request 1. A server slower than that joins later: on a K3-family
model through a system message in `messages` carrying `tools` (models.toml tools_in_messages), so the
top-level tools block and every earlier message reach the server byte for byte as before (prefix reuse 1.0);
SearchTools' finds join the same way. Other models keep the fallback (the end of the top-level block:
tests/e2e/test_mcp.py)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

from mcp_support import http_everything, npm_server, pypi_server, write_config

from scripted_server import ScriptedModelServer
from support import TESTS_DIR, run_kimi, tool_call, tool_results

FIXTURE = TESTS_DIR / "mcp_fixture_server.py"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def prefix_reuse(before: dict[str, Any], after: dict[str, Any]) -> float:
    """How much of the earlier request's prompt (tools block, then messages) the later one repeats byte for
    byte at its start, as a fraction of the earlier one's bytes."""
    old = _dumps(before.get("tools", [])) + "".join(_dumps(m) for m in before["messages"])
    new = _dumps(after.get("tools", [])) + "".join(_dumps(m) for m in after["messages"])
    same = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    return same / len(old)


def declarations(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m.get("role") == "system" and "tools" in m]


def mcp_names(tools: list[dict[str, Any]], server: str) -> list[str]:
    return [t["function"]["name"] for t in tools if t["function"]["name"].startswith(f"mcp__{server}__")]


def test_three_stdio_reference_servers_and_an_http_one_have_all_their_tools_in_request_1(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    """The wait is raised to 60 s here: on the loaded 2-core test machine importing the MCP SDK alone took
    5-8 s and four servers starting at once 10-17 s (each alone 2-4 s); what is tested is that request 1
    waits until they are ready, within the wait. The default's cost is measured in bench/mcp_start.py."""
    home_config = home / ".kimi" / "config.toml"
    home_config.write_text(home_config.read_text() + "\n[mcp]\nstartup_timeout = 60\n")
    with http_everything() as url:
        write_config(repo, {
            "filesystem": {"command": npm_server("mcp-server-filesystem"), "args": [str(repo)]},
            "memory": {"command": npm_server("mcp-server-memory")},
            "time": {"command": pypi_server("mcp-server-time")},
            "web": {"url": url},
        })  # fmt: skip
        server.add({"tool_calls": [tool_call("Shell", {"command": "true"}, "s")]}, {"text": "done"})
        proc = run_kimi(["-p", "use the servers", "--yolo"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    first, last = server.requests[0]["tools"], server.requests[-1]["tools"]
    for name in ("filesystem", "memory", "time", "web"):
        assert mcp_names(first, name), (name, proc.stderr)
        assert mcp_names(first, name) == mcp_names(last, name)  # nothing of theirs came later
    assert "mcp__filesystem__read_text_file" in mcp_names(first, "filesystem")
    assert "mcp__web__echo" in mcp_names(first, "web")
    assert "still starting" not in proc.stderr


def slow_server(repo: Path, seconds: float, tools: int = 3) -> Path:
    """A stdio server that reads nothing for `seconds` (its initialize waits in the pipe), then serves. It
    touches .started in the workspace: its config must say `"workspace": "write"` (it runs sandboxed)."""
    script = repo / "slow_server.sh"
    script.write_text(f"#!/bin/sh\nsleep {seconds}\ntouch .started\nexec {sys.executable} {FIXTURE} many {tools}\n")
    script.chmod(0o755)
    return script


def test_a_server_answering_initialize_after_8_s_joins_through_messages_tools_and_the_prefix_holds(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    write_config(repo, {"slow": {"command": str(slow_server(repo, 8)), "startup_timeout": 60, "workspace": "write"}})
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "until [ -e .started ]; do sleep 0.05; done; sleep 1"},
                                  "wait")]},
        {"tool_calls": [tool_call("mcp__slow__t001", {"query": "late"}, "late")]},
        {"text": "done"},
    )  # fmt: skip
    proc = run_kimi(["-p", "use the slow server", "--yolo"], repo, {**env, "KIMI_MODEL": "kimi-k3"}, server, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "MCP servers still starting: slow" in proc.stderr  # the user is told it went without them
    requests = server.requests
    assert len(requests) == 3
    assert not mcp_names(requests[0]["tools"], "slow") and not declarations(requests[0])
    for before, after in itertools.pairwise(requests):
        assert _dumps(after["tools"]) == _dumps(before["tools"])  # the top-level block never changes
        assert prefix_reuse(before, after) == 1.0
    # the call waited for the server where it was not declared yet; the declaration went before the next
    # request either way, once, and stays in place
    (declared,) = declarations(requests[-1])
    assert set(declared) == {"role", "tools"}  # no content key at all: the platform refuses even null
    assert [t["function"]["name"] for t in declared["tools"]] == ["mcp__slow__t000", "mcp__slow__t001",
                                                                   "mcp__slow__t002"]  # fmt: skip
    assert json.loads(tool_results(server, 2)[-1]) == {"tool": "t001", "arguments": {"query": "late"}}


def test_a_servers_own_startup_wait_overrides_the_mcp_default(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    """`[mcp] startup_timeout = 60` would hold request 1 until the 2 s server is ready; its own
    `startup_wait: 0` sends request 1 at once, without it, and says so."""
    home_config = home / ".kimi" / "config.toml"
    home_config.write_text(home_config.read_text() + "\n[mcp]\nstartup_timeout = 60\n")
    write_config(repo, {"slow": {"command": str(slow_server(repo, 2)), "startup_timeout": 60, "startup_wait": 0,
                                 "workspace": "write"},
                        "waited": {"command": sys.executable, "args": [str(FIXTURE), "many", "2"]}})  # fmt: skip
    server.add({"text": "done"})
    proc = run_kimi(["-p", "hi"], repo, {**env, "KIMI_MODEL": "kimi-k3"}, server, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "MCP servers still starting: slow;" in proc.stderr
    assert not mcp_names(server.requests[0]["tools"], "slow")
    assert mcp_names(server.requests[0]["tools"], "waited") == ["mcp__waited__t000", "mcp__waited__t001"]


def test_tools_searchtools_finds_join_through_messages_tools_on_k3(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path, home: Path
) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"many": {"command": sys.executable,
                                                          "args": [str(FIXTURE), "many", "150"]}}}))  # fmt: skip
    home_config = home / ".kimi" / "config.toml"  # the wait: ready for request 1 even on a loaded machine
    home_config.write_text(
        home_config.read_text() + '\n[approval]\nallow = ["mcp__many__*"]\n[mcp]\nstartup_timeout = 60\n'
    )
    server.add(
        {"tool_calls": [tool_call("SearchTools", {"query": "kubernetes shard 42", "limit": 3}, "s1")]},
        {"tool_calls": [tool_call("mcp__many__t042", {"query": "pods"}, "c1")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "check the cluster", "--mcp-config", str(config)], repo, {**env, "KIMI_MODEL": "kimi-k3"},
                    server)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    requests = server.requests
    assert len(requests) == 3
    assert "SearchTools" in [t["function"]["name"] for t in requests[0]["tools"]]
    assert not mcp_names(requests[0]["tools"], "many")  # 150 tools: deferred, ready in request 1 as a pool
    for before, after in itertools.pairwise(requests):
        assert _dumps(after["tools"]) == _dumps(before["tools"])
        assert prefix_reuse(before, after) == 1.0
    (declared,) = declarations(requests[1])
    assert "mcp__many__t042" in [t["function"]["name"] for t in declared["tools"]]
    assert json.loads(tool_results(server, 2)[-1]) == {"tool": "t042", "arguments": {"query": "pods"}}
