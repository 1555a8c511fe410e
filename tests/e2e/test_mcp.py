"""MCP servers become tools, end to end through `kimi -p`, against the reference servers from npm."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import (
    ROOT_DIR,
    TESTS_DIR,
    free_port,
    processes_with,
    require,
    result_json,
    run_kimi,
    tool_call,
    tool_results,
    trust_folder,
    wait_until,
)

ROOT = ROOT_DIR
BIN = ROOT / ".ci" / "node" / "node_modules" / ".bin"


def everything() -> str:
    exe = BIN / "mcp-server-everything"
    require("node and mcp-server-everything", exe.exists(), ".ci/run installs it into .ci/node from npm")
    return str(exe)


def write_config(repo: Path, servers: dict) -> None:
    (repo / ".kimi").mkdir(exist_ok=True)
    (repo / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    trust_folder(repo)  # the user's own project: its servers may start (kimi_cli.hostsafe.trust)


def allow(repo: Path, *rules: str) -> None:
    (repo / ".kimi").mkdir(exist_ok=True)
    (repo / ".kimi" / "config.toml").write_text("[approval]\nallow = [" + ", ".join(f'"{r}"' for r in rules) + "]\n")
    trust_folder(repo)


def test_a_stdio_server_tool_runs_and_its_image_reaches_the_model(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    write_config(repo, {"everything": {"command": everything()}})
    allow(repo, "mcp__everything__*")
    server.add(
        {"tool_calls": [tool_call("mcp__everything__echo", {"message": "hello mcp"}, "e1"),
                        tool_call("mcp__everything__get-tiny-image", {}, "i1")]},
        {"text": "done"},
    )  # fmt: skip
    # K2.6 keeps late tools in the top-level block (K3 declares them in messages: test_mcp_first_request.py)
    proc = run_kimi(["-p", "use mcp", "--output-format", "json"], repo, {**env, "KIMI_MODEL": "kimi-k2.6"}, server)
    assert proc.returncode == 0, proc.stderr
    # The first request waits up to [mcp] startup_timeout; a server later than that is there by the second,
    # at the end.
    first = [t["function"]["name"] for t in server.requests[0]["tools"]]
    names = [t["function"]["name"] for t in server.requests[1]["tools"]]
    assert "mcp__everything__echo" in names and "mcp__everything__get-sum" in names
    assert names[: len(first)] == first and names.index("ReadFile") < names.index("mcp__everything__echo")
    echo, image = tool_results(server, 1)
    assert "Echo: hello mcp" in echo and "[image: image/png" in image
    parts = [m["content"] for m in server.requests[1]["messages"] if isinstance(m.get("content"), list)]
    assert parts and parts[-1][1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_headless_without_a_rule_refuses_and_names_the_rule(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    write_config(repo, {"everything": {"command": everything()}})
    server.add({"tool_calls": [tool_call("mcp__everything__get-sum", {"a": 1, "b": 2}, "s")]}, {"text": "ok"})
    proc = run_kimi(["-p", "sum"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    (result,) = tool_results(server, 1)
    assert 'allow = ["mcp__everything__get-sum"]' in result and "--yolo" in result
    server.add({"tool_calls": [tool_call("mcp__everything__get-sum", {"a": 1, "b": 2}, "s")]}, {"text": "ok"})
    assert run_kimi(["-p", "sum", "--yolo"], repo, env, server).returncode == 0
    assert "3" in tool_results(server, 3)[0]


def test_a_server_that_never_starts_leaves_the_session_working(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    write_config(repo, {"broken": {"command": "/nonexistent/mcp-server"},
                        "slow": {"command": "sleep", "args": ["30"], "startup_timeout": 1}})  # fmt: skip
    # The first request does not wait for them; a call naming their tools waits until each has failed.
    server.add({"tool_calls": [tool_call("mcp__broken__x", {}, "b"), tool_call("mcp__slow__x", {}, "s")]},
               {"text": "still fine"})  # fmt: skip
    started = time.monotonic()
    proc = run_kimi(["-p", "hi", "--output-format", "stream-json"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 15
    notices = [json.loads(line)["message"] for line in proc.stdout.splitlines() if '"notice"' in line]
    assert any("'broken' is not available" in n for n in notices)
    assert any("'slow' is not available" in n and "1 s" in n for n in notices)
    assert all("unknown tool" in r for r in tool_results(server, 1))
    for index in range(len(server.requests)):
        assert not any(name.startswith("mcp__") for name in server.offered_tools(index))


def test_an_error_result_a_timeout_and_a_killed_server_come_back_as_tool_errors(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    write_config(repo, {"everything": {"command": everything(), "tool_timeout": 1}})
    allow(repo, "mcp__everything__*")
    server.add(
        {"tool_calls": [tool_call("mcp__everything__get-sum", {"a": "not a number"}, "bad")]},
        {"tool_calls": [tool_call("mcp__everything__trigger-long-running-operation", {"duration": 5, "steps": 5},
                                  "slow")]},
        {"tool_calls": [tool_call("Shell", {"command": "true"}, "sh")]},
        {"text": "survived"},
    )  # fmt: skip
    proc = run_kimi(["-p", "try", "--output-format", "json", "--yolo"], repo, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert result_json(proc)["text"] == "survived"
    results = tool_results(server, 3)
    assert results[0].startswith("error") or "error" in results[0].lower()
    assert "took longer than 1 s" in results[1]


def test_server_killed_mid_session_is_reconnected_once(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    marker = repo / "pids"
    wrapper = repo / "wrap.sh"
    wrapper.write_text(f"#!/bin/sh\necho $$ >> {marker}\nexec {everything()}\n")
    wrapper.chmod(0o755)
    write_config(repo, {"everything": {"command": str(wrapper)}})
    allow(repo, "mcp__everything__*")
    kill = f"kill -9 $(head -1 {marker}); sleep 0.3; echo killed"
    server.add(
        {"tool_calls": [tool_call("mcp__everything__echo", {"message": "one"}, "a")]},
        {"tool_calls": [tool_call("Shell", {"command": kill}, "k")]},
        {"tool_calls": [tool_call("mcp__everything__echo", {"message": "two"}, "b")]},
        {"text": "done"},
    )
    proc = run_kimi(["-p", "x", "--sandbox", "none", "--yolo"], repo, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = tool_results(server, 3)
    assert "Echo: one" in results[0] and "Echo: two" in results[2]
    assert len(marker.read_text().split()) == 2  # started again, once


def test_variables_expand_and_a_missing_one_is_a_clear_error(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    write_config(repo, {"everything": {"command": "${MCP_BIN}"}})
    allow(repo, "mcp__everything__echo")
    server.add({"tool_calls": [tool_call("mcp__everything__echo", {"message": "x"}, "e")]}, {"text": "ok"})
    proc = run_kimi(["-p", "x"], repo, {**env, "MCP_BIN": everything()}, server)
    assert proc.returncode == 0, proc.stderr
    assert "Echo: x" in tool_results(server, 1)[0]
    missing = run_kimi(["-p", "x"], repo, env, server)
    assert missing.returncode == 2 and "${MCP_BIN} is not set" in missing.stderr and "mcp.json" in missing.stderr


def test_names_are_sanitised_capped_and_never_shadow_builtins() -> None:
    from kimi_cli.extensions.mcp.naming import assign_names

    long_tool = "t" * 80
    names = assign_names([("my server", "read.file"), ("a", long_tool), ("x", "y")], {"mcp__x__y"})
    assert names[("my server", "read.file")] == "mcp__my_server__read_file"
    assert len(names[("a", long_tool)]) == 64
    assert names[("x", "y")] != "mcp__x__y" and names[("x", "y")].startswith("mcp__x__y")


@pytest.fixture
def http_everything() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([everything(), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def listening() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_until(listening, timeout=20, what="the MCP server to listen")
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(5)


def test_streamable_http_server_and_the_mcp_commands(
    repo: Path, env: dict, server: ScriptedModelServer, http_everything: str
) -> None:
    add = run_kimi(["mcp", "add", "web", "--url", http_everything], repo, env)
    assert add.returncode == 0, add.stderr
    add2 = run_kimi(["mcp", "add", "broken", "--", "/nonexistent/server"], repo, env)
    assert add2.returncode == 0, add2.stderr
    listing = run_kimi(["mcp", "list"], repo, env)
    assert "web" in listing.stdout and "ready, " in listing.stdout and "broken" in listing.stdout
    assert "failed" in listing.stdout
    tested = run_kimi(["mcp", "test", "web"], repo, env)
    assert tested.returncode == 0 and "echo" in tested.stdout and "ready in" in tested.stdout
    assert run_kimi(["mcp", "remove", "broken"], repo, env).returncode == 0
    server.add({"tool_calls": [tool_call("mcp__web__echo", {"message": "over http"}, "h")]}, {"text": "ok"})
    proc = run_kimi(["-p", "x", "--yolo"], repo, env, server)
    assert proc.returncode == 0, proc.stderr
    assert "Echo: over http" in tool_results(server, 1)[0]


def test_a_bad_mcp_file_names_the_file_and_key(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    write_config(repo, {"bad": {"command": "x", "url": "http://y"}})
    proc = run_kimi(["-p", "x"], repo, env, server)
    assert proc.returncode == 2 and "mcp.json" in proc.stderr and "mcpServers.bad" in proc.stderr


def test_a_server_that_writes_garbage_is_dropped_and_mcp_children_die_with_kimi(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    import signal

    from support import TEST_KEY, kimi_executable

    garbage = repo / "garbage.sh"
    garbage.write_text("#!/bin/sh\nwhile :; do echo 'this is not json-rpc'; sleep 0.05; done\n")
    garbage.chmod(0o755)
    wrapper = repo / "marked.sh"
    wrapper.write_text(f"#!/bin/bash\nexec -a mcp-marker-4711 node {everything()}\n")
    wrapper.chmod(0o755)
    write_config(repo, {"junk": {"command": str(garbage), "startup_timeout": 2},
                        "good": {"command": str(wrapper)}})  # fmt: skip
    allow(repo, "mcp__good__*")
    server.add(  # naming a junk tool waits for junk to fail (the first request waits for no server)
        {"tool_calls": [tool_call("mcp__good__echo", {"message": "still here"}, "e"),
                        tool_call("mcp__junk__x", {}, "j")]},
        {"tool_calls": [tool_call("Shell", {"command": "sleep 60"}, "hold")]},
    )  # fmt: skip
    full = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url, "KIMI_API_KEY": TEST_KEY}
    proc = subprocess.Popen([*kimi_executable(), "-p", "x", "--output-format", "stream-json"], cwd=repo, env=full,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert proc.stdout is not None
    notices = []
    for line in proc.stdout:
        event = json.loads(line)
        if event["type"] == "notice":
            notices.append(event["message"])
        if event["type"] == "tool_call" and "sleep 60" in event["arguments"]:
            break
    assert any("'junk' is not available" in n for n in notices)
    assert "Echo: still here" in tool_results(server, 1)[0]
    marker = subprocess.run(["pgrep", "-f", "mcp-marker-4711"], capture_output=True, text=True).stdout.split()
    assert marker, "the good server should be running"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == 4
    wait_until(lambda: processes_with("mcp-marker-4711") == [], what="the MCP server to die with kimi")
    assert subprocess.run(["pgrep", "-f", str(garbage)], capture_output=True).stdout == b""


def test_a_server_ready_after_the_first_request_joins_the_end_of_the_tools_block(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    """On a model without messages[].tools (the fallback): the first request waits for a slow server only
    up to [mcp] startup_timeout. When it is ready, its tools are appended after
    everything already sent (the earlier tools block stays byte-identical: the cached prefix holds), and the
    model is told in one line. The slow server starts only once the first step has opened its gate."""
    import itertools
    import sys

    fixture = TESTS_DIR / "mcp_fixture_server.py"
    slow = repo / "slow_server.sh"
    slow.write_text(
        "#!/bin/sh\nwhile [ ! -e .gate ]; do sleep 0.05; done\ntouch .started\n"
        f"exec {sys.executable} {fixture} many 3\n"
    )
    slow.chmod(0o755)
    # it touches .started in the workspace, which a sandboxed server may write only when its config says so
    write_config(repo, {"slow": {"command": str(slow), "startup_timeout": 60, "workspace": "write"}})
    server.add(
        {"tool_calls": [tool_call("Shell", {"command": "touch .gate; until [ -e .started ]; do sleep 0.05; done; "
                                                       "sleep 2"}, "gate")]},
        {"tool_calls": [tool_call("Shell", {"command": "sleep 1"}, "wait")]},
        {"text": "done"},
    )  # fmt: skip
    proc = run_kimi(["-p", "use the slow server", "--yolo"], repo, {**env, "KIMI_MODEL": "kimi-k2.6"}, server)
    assert proc.returncode == 0, proc.stderr
    blocks = [request["tools"] for request in server.requests]
    assert not any(t["function"]["name"].startswith("mcp__slow__") for t in blocks[0])
    for before, after in itertools.pairwise(blocks):
        assert json.dumps(after[: len(before)]) == json.dumps(before)  # append-only: what was sent stays
    last = [t["function"]["name"] for t in blocks[-1]]
    assert last[len(blocks[0]) :] == ["mcp__slow__t000", "mcp__slow__t001", "mcp__slow__t002"]
    told = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"
            and isinstance(m["content"], str) and "'slow' is ready" in m["content"]]  # fmt: skip
    assert len(told) == 1 and "mcp__slow__t000" in told[0] and "end of your tool list" in told[0]
