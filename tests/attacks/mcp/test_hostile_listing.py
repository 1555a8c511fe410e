"""tools/list read tool by tool (kimi_cli/extensions/mcp/listing.py): what a hostile server puts in
the tools it knows will be rejected must stay bounded and must not forge what `kimi mcp test` shows.

Server: tests/mcp_listing_server.py (plain JSON-RPC). Each attack test sits beside the legitimate use."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kimi_cli.extensions.mcp.config import ServerConfig
from kimi_cli.extensions.mcp.manager import McpManager
from kimi_cli.extensions.mcp.wiring import mcp_tools

from support import TESTS_DIR, run_kimi

SERVER = str(TESTS_DIR.joinpath("mcp_listing_server.py"))
FIXTURE = str(TESTS_DIR.joinpath("mcp_fixture_server.py"))


def _settled(args: list[str], tmp_path: Path) -> McpManager:
    cfg = ServerConfig(command=sys.executable, args=args, startup_timeout=60)
    manager = McpManager({"srv": cfg}, tmp_path / "logs")
    manager.start()
    manager.wait_settled()
    return manager


def test_a_server_flooding_invalid_tools_gets_a_bounded_number_of_notices(tmp_path: Path) -> None:
    """listing.py appends every rejected tool of every page (50 pages, no cap per page) to state.rejected, and
    wiring.py `_tools_of` makes one notice of each: 2000 invalid tools a page and a nextCursor that never
    ends give 100,000 rejected entries and 100,000 session notices (and 100,000 lines of `kimi mcp test`)."""
    manager = _settled([SERVER, "flood", "2000"], tmp_path)
    try:
        state = manager.states["srv"]
        assert state.status == "ready", state.error
        assert len(state.tools) == 50  # the valid tool of each page is kept: the server still works
        _tools, notices, _starting = mcp_tools(manager, None, set())  # type: ignore[arg-type]
        assert len(notices) <= 20, f"{len(notices)} notices"
        assert len(state.rejected) <= 1000, f"{len(state.rejected)} rejected entries kept"
    finally:
        manager.close()


def test_a_few_invalid_tools_each_get_their_own_notice(tmp_path: Path) -> None:
    manager = _settled([FIXTURE, "invalid"], tmp_path)
    try:
        _tools, notices, _starting = mcp_tools(manager, None, set())  # type: ignore[arg-type]
        for name in ("bare", "nulled", "stringy"):
            assert sum(f"tool '{name}' is left out" in n for n in notices) == 1, notices
    finally:
        manager.close()


def _user_server(home: Path, args: list[str]) -> None:
    cfg = {"command": sys.executable, "args": args, "startup_timeout": 60}
    (home / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": {"srv": cfg}}))


def test_a_rejected_tools_name_cannot_forge_lines_of_kimi_mcp_test(repo: Path, env: dict, home: Path) -> None:
    """commands/mcp.py `test_command` prints each rejected name through `visible()`, which keeps newlines: a
    name `x\\n  github__delete_repo: left out ...\\nkimi: every server ready` prints as three lines of
    kimi's own output. (The session notice uses repr and is not affected.)"""
    _user_server(home, [SERVER, "spoof"])
    proc = run_kimi(["mcp", "test", "srv"], repo, env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert not any(line.startswith("kimi: every server ready") for line in lines), proc.stdout
    assert not any(line.startswith("  github__delete_repo") for line in lines), proc.stdout


def test_kimi_mcp_test_names_an_ordinary_rejected_tool_on_its_line(repo: Path, env: dict, home: Path) -> None:
    _user_server(home, [FIXTURE, "invalid"])
    proc = run_kimi(["mcp", "test", "srv"], repo, env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "  bare: left out, not valid MCP (inputSchema: Field required)" in proc.stdout.splitlines(), proc.stdout
