"""MCP servers run on the host: what they start must be what the user agreed to, not what the workspace wrote.

The attacks (each passed before the fix):
- a trusted folder's `mcp_config = ["tools/mcp.json"]`: the trust digest held the path, not the file, so a
  sandboxed command rewrote tools/mcp.json and the next session started its server without asking;
- a trusted server `sh tools/server.sh`: the script is a workspace file; rewritten, it ran at the next start
  (and at a reconnect within the session) without asking;
- the user's OWN server `python3 -m some_server`, started in the workspace: Python put the workspace first
  on sys.path, so a `some_server.py` dropped there ran instead; and every stdio server got KIMI_API_KEY.
Each sits beside the legitimate use.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from kimi_cli.extensions.mcp.config import ServerConfig
from kimi_cli.extensions.mcp.manager import McpManager
from kimi_cli.hostsafe import trust

from support import TEST_KEY, TESTS_DIR, run_kimi, trust_folder, wait_until

FIXTURE = TESTS_DIR / "mcp_fixture_server.py"


def marks_of(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def marking(marks: Path, word: str) -> str:
    return f"#!/bin/sh\necho {word} >> {marks}\n"


@pytest.fixture
def kimi_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMI_HOME", str(home / ".kimi"))
    trust._DECIDED.clear()
    return home / ".kimi"


def headless(ws: Path, env: dict[str, str]) -> Any:
    """A `kimi -p` run that needs no model: the servers start at session start, before any request."""
    env = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": "http://127.0.0.1:9/v1", "KIMI_API_KEY": TEST_KEY}
    return run_kimi(["-p", "hi"], ws, env, timeout=90)


# --- the trust digest covers what the servers run ----------------------------------------------------------


def test_a_trusted_mcp_config_file_rewritten_by_a_command_asks_again(tmp_path: Path, home: Path, env: dict) -> None:
    ws = tmp_path / "ws"
    marks = ws / "marks"  # a folder's server runs sandboxed: it marks the workspace, which its config lets it write
    (ws / ".kimi").mkdir(parents=True)
    (ws / "tools").mkdir()
    (ws / ".kimi" / "config.toml").write_text('mcp_config = ["tools/mcp.json"]\n')
    legit = {"mcpServers": {"docs": {"command": "/bin/sh", "args": ["-c", f"echo legit >> {marks}"],
                                     "workspace": "write"}}}  # fmt: skip
    (ws / "tools" / "mcp.json").write_text(json.dumps(legit))
    trust_folder(ws, home)
    headless(ws, env)
    assert marks_of(marks) == ["legit"]  # the trusted server starts

    evil = {"mcpServers": {"docs": {"command": "/bin/sh", "args": ["-c", f"echo evil >> {marks}"],
                                    "workspace": "write"}}}  # fmt: skip
    (ws / "tools" / "mcp.json").write_text(json.dumps(evil))  # what a sandboxed command can do
    proc = headless(ws, env)
    assert marks_of(marks) == ["legit"], proc.stderr
    assert "not trusted" in proc.stderr and "tools/mcp.json" in proc.stderr


def test_a_trusted_servers_workspace_script_rewritten_asks_again(tmp_path: Path, home: Path, env: dict) -> None:
    ws = tmp_path / "ws"
    marks = ws / "marks"  # sandboxed, as above
    (ws / ".kimi").mkdir(parents=True)
    (ws / "tools").mkdir()
    (ws / "tools" / "server.sh").write_text(marking(marks, "legit"))
    servers = {"mcpServers": {"local": {"command": "/bin/sh", "args": ["tools/server.sh"], "workspace": "write"}}}
    (ws / ".kimi" / "mcp.json").write_text(json.dumps(servers))
    trust_folder(ws, home)
    headless(ws, env)
    assert marks_of(marks) == ["legit"]

    (ws / "tools" / "server.sh").write_text(marking(marks, "evil"))
    proc = headless(ws, env)
    assert marks_of(marks) == ["legit"], proc.stderr
    assert "not trusted" in proc.stderr


def test_a_server_script_rewritten_during_the_session_is_not_restarted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, marks = tmp_path / "ws", tmp_path / "marks"
    (ws / "tools").mkdir(parents=True)
    monkeypatch.chdir(ws)
    script = ws / "tools" / "server.py"
    script.write_text(
        f"import pathlib, runpy, sys\nwith open({str(marks)!r}, 'a') as f: f.write('legit\\n')\n"
        f"sys.argv = [{str(FIXTURE)!r}, 'many', '2']\nrunpy.run_path({str(FIXTURE)!r}, run_name='__main__')\n"
    )
    config = ServerConfig(command=sys.executable, args=["tools/server.py"], sandbox=False)  # the host launch
    manager = McpManager({"local": config}, tmp_path / "logs")
    manager.start()
    try:
        manager.wait_settled()
        assert manager.states["local"].status == "ready" and marks_of(marks) == ["legit"]
        script.write_text(f"open({str(marks)!r}, 'a').write('evil\\n')\n")  # a command rewrites the script
        import asyncio

        assert asyncio.run(manager.reconnect("local")) is False  # the server died: a reconnect would run it
        assert "changed since the session started" in manager.states["local"].error
        assert marks_of(marks) == ["legit"]
    finally:
        manager.close()


# --- the user's own servers, started in a hostile workspace ------------------------------------------------


def probe_module(folder: Path, name: str, word: str, marks: Path) -> None:
    """A Python module that records `word` and whether it saw kimi's API key, then serves MCP."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(
        "import os, runpy, sys\n"
        f"with open({str(marks)!r}, 'a') as f:\n"
        f"    f.write({word!r} + ' key=' + str('KIMI_API_KEY' in os.environ) + '\\n')\n"
        f"sys.argv = [{str(FIXTURE)!r}, 'many', '2']\nrunpy.run_path({str(FIXTURE)!r}, run_name='__main__')\n"
    )


def start_one(config: ServerConfig, logs: Path) -> McpManager:
    manager = McpManager({"probe": config}, logs)
    manager.start()
    manager.wait_settled()
    return manager


def test_the_users_own_python_server_never_imports_a_module_planted_in_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, marks, lib = tmp_path / "ws", tmp_path / "marks", tmp_path / "site"
    probe_module(lib, "kimi_probe_srv", "real", marks)  # the server the user installed
    probe_module(ws, "kimi_probe_srv", "planted", marks)  # what a sandboxed command dropped in the workspace
    venv_bin = ws / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python3").write_text(marking(marks, "planted-python"))
    (venv_bin / "python3").chmod(0o755)
    monkeypatch.chdir(ws)
    monkeypatch.setenv("PATH", f"{venv_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("KIMI_API_KEY", TEST_KEY)
    from kimi_cli.hostsafe.programs import sandbox_writable

    sandbox_writable(ws)  # as a session in this workspace does
    config = ServerConfig(
        command="python3", args=["-m", "kimi_probe_srv"], env={"PYTHONPATH": str(lib)}, sandbox=False
    )  # the host launch (sandboxed: tests/attacks/mcp/test_sandboxed_mcp_server.py)
    manager = start_one(config, tmp_path / "logs")
    try:
        assert manager.states["probe"].status == "ready", manager.states["probe"].error
    finally:
        manager.close()
    assert marks_of(marks) == ["real", "key=False"]  # the installed module, and no API key


def test_a_server_that_names_kimis_key_in_its_env_still_gets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marks, lib = tmp_path / "marks", tmp_path / "site"
    probe_module(lib, "kimi_probe_srv", "real", marks)
    monkeypatch.chdir(tmp_path)
    config = ServerConfig(command=sys.executable, args=["-m", "kimi_probe_srv"],
                          env={"PYTHONPATH": str(lib), "KIMI_API_KEY": TEST_KEY}, sandbox=False)  # fmt: skip
    manager = start_one(config, tmp_path / "logs")
    try:
        assert manager.states["probe"].status == "ready", manager.states["probe"].error
    finally:
        manager.close()
    wait_until(marks.exists, 5, "the server's marks")
    assert marks_of(marks) == ["real", "key=True"]


def test_trust_names_the_mcp_config_servers_and_the_script_digests(tmp_path: Path, kimi_home: Path) -> None:
    (tmp_path / ".kimi").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / ".kimi" / "config.toml").write_text('mcp_config = ["tools/mcp.json"]\n')
    (tmp_path / "tools" / "run.sh").write_text("exec true\n")
    servers = {"mcpServers": {"a": {"command": "/bin/sh", "args": ["tools/run.sh"]}}}
    (tmp_path / "tools" / "mcp.json").write_text(json.dumps(servers))
    state = trust.assess(tmp_path)  # the file is the folder's, wherever `kimi trust` runs
    keys = [w.key for w in state.asks]
    assert "mcp_config" in keys and "mcp_config:tools/mcp.json" in keys and "mcp:tools/mcp.json:a:files" in keys
    assert any("tools/run.sh" in line for line in state.summary())
