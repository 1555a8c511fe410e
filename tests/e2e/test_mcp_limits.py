"""MCP limits: a server's stderr log is capped and rotated, one oversized image never reaches the session
log (a placeholder the model can read instead) while a small one still does, and MCP strings are shown
with their escapes written out. `kimi mcp add` keeps tokens out of the terminal and in a 0600 file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kimi_cli.extensions.mcp.config import ServerConfig
from kimi_cli.extensions.mcp.manager import McpManager

from scripted_server import ScriptedModelServer
from support import TESTS_DIR, run_kimi, tool_call, tool_results

SERVER = str(TESTS_DIR.joinpath("mcp_hostile_server.py"))


def hostile(home: Path, noise_mb: int = 0) -> None:
    """The server in the user's own config (no folder trust needed), allowed to run without asking."""
    cfg = {"command": sys.executable, "args": [SERVER], "env": {"NOISE_MB": str(noise_mb)}, "startup_timeout": 60}
    (home / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": {"hostile": cfg}}))
    with (home / ".kimi" / "config.toml").open("a") as fh:
        fh.write('\n[approval]\nallow = ["mcp__hostile__*"]\n')


def test_a_server_writing_100_mb_to_stderr_leaves_a_few_mb_of_log(tmp_path: Path) -> None:
    cfg = ServerConfig(command=sys.executable, args=[SERVER], env={"NOISE_MB": "100"}, startup_timeout=120)
    manager = McpManager({"noisy": cfg}, tmp_path / "logs")
    manager.start()
    manager.wait_settled()
    try:
        assert manager.states["noisy"].status == "ready", manager.states["noisy"].error
    finally:
        manager.close()
    logs = sorted((tmp_path / "logs").iterdir())
    assert [p.name for p in logs] == ["mcp-noisy.log", "mcp-noisy.log.1"]
    assert sum(p.stat().st_size for p in logs) < 5 * 1024 * 1024
    assert "hostile server ready" in (tmp_path / "logs" / "mcp-noisy.log").read_text()  # the newest lines kept
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in logs)


def test_a_quiet_server_keeps_its_whole_stderr(tmp_path: Path) -> None:
    manager = McpManager({"quiet": ServerConfig(command=sys.executable, args=[SERVER])}, tmp_path / "logs")
    manager.start()
    manager.wait_settled()
    manager.close()
    assert (tmp_path / "logs" / "mcp-quiet.log").read_text() == "hostile server ready\n"


def test_a_20_mb_image_is_left_out_and_a_small_one_passes(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    hostile(home)
    server.add(
        {
            "tool_calls": [
                tool_call("mcp__hostile__big_image", {}, "b1"),
                tool_call("mcp__hostile__small_image", {}, "s1"),
            ]
        },
        {"text": "done"},
    )
    proc = run_kimi(["-p", "images", "--output-format", "json"], repo, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr
    big, small = tool_results(server, 1)
    assert "image left out" in big and "20,971,520 bytes" in big
    assert small.startswith("[image: image/png")
    images = [p for m in server.requests[1]["messages"] if isinstance(m.get("content"), list) for p in m["content"]
              if p.get("type") == "image_url"]  # fmt: skip
    assert len(images) == 1 and len(images[0]["image_url"]["url"]) < 10_000
    log = next((home / ".kimi" / "sessions").rglob("context.jsonl"))
    assert log.stat().st_size < 1024 * 1024


def test_mcp_strings_reach_the_terminal_with_escapes_written_out(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    hostile(home)
    proc = run_kimi(["mcp", "test", "hostile"], repo, env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "Returns a huge image.\\x1b]52;c;ZXZpbA==\\x07" in proc.stdout
    server.add({"tool_calls": [tool_call("mcp__hostile__osc", {}, "o1")]}, {"text": "done"})
    proc = run_kimi(["-p", "escapes"], repo, env, server, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr
    assert "\x1b]52" in tool_results(server, 1)[0]  # the model still gets the exact text


def test_mcp_add_writes_the_token_to_a_private_file_and_never_prints_it(repo: Path, env: dict, home: Path) -> None:
    token = "Authorization=Bearer sk-live-TOKEN-0123456789"
    proc = run_kimi(["mcp", "add", "api", "--url", "http://127.0.0.1:9/mcp", "--header", token, "--scope", "user"],
                    repo, env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "sk-live-TOKEN" not in proc.stdout + proc.stderr and "[hidden]" in proc.stdout
    path = home / ".kimi" / "mcp.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert (
        json.loads(path.read_text())["mcpServers"]["api"]["headers"]["Authorization"]
        == "Bearer sk-live-TOKEN-0123456789"
    )
    proc = run_kimi(
        ["mcp", "add", "local", "--scope", "project", "--", "srv", "--api-key", "sk-live-ARG-987"], repo, env
    )
    assert proc.returncode == 0, proc.stderr
    assert "sk-live-ARG" not in proc.stdout and "--api-key" in proc.stdout
    assert (repo / ".kimi" / "mcp.json").stat().st_mode & 0o777 == 0o600


def test_mcp_add_and_list_never_print_a_password_or_token_carried_in_the_url(repo: Path, env: dict) -> None:
    url = "http://alice:pw-SECRET-1@127.0.0.1:9/mcp?access_token=tok-SECRET-2&v=2"
    proc = run_kimi(["mcp", "add", "api", "--url", url, "--scope", "project"], repo, env)
    assert proc.returncode == 0, proc.stderr
    listing = run_kimi(["mcp", "list"], repo, env, timeout=120)
    for out in (proc.stdout + proc.stderr, listing.stdout + listing.stderr):
        assert "SECRET" not in out, out
    assert "alice:[hidden]@127.0.0.1:9/mcp?access_token=[hidden]&v=2" in listing.stdout, listing.stdout
    assert json.loads((repo / ".kimi" / "mcp.json").read_text())["mcpServers"]["api"]["url"] == url
