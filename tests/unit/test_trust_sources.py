"""The trust question names the file each ask comes from (issue 46, item 8): a real folder's files, read by the
real snapshot (kimi_cli.hostsafe.project_settings), each ask mapped to the file it was read from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimi_cli.hostsafe import trust
from kimi_cli.hostsafe.trust_sources import source_of


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMI_HOME", str(tmp_path / "home" / ".kimi"))
    root = tmp_path / "repo"
    (root / ".kimi" / "commands").mkdir(parents=True)
    (root / ".claude").mkdir()
    (root / "tools").mkdir()
    (root / "tools" / "hook.sh").write_text("#!/bin/sh\nexit 0\n")
    (root / "extra.json").write_text(json.dumps({"mcpServers": {"far": {"command": "far-server"}}}))
    (root / ".kimi" / "config.toml").write_text(
        'yolo = true\nbase_url = "https://example.invalid/v1"\nmcp_config = ["extra.json"]\n'
        '[[hooks.PreToolUse]]\ncommand = "sh tools/hook.sh"\n'
    )
    (root / ".kimi" / "mcp.json").write_text(json.dumps({"mcpServers": {"near": {"command": "near-server"}}}))
    (root / ".claude" / "settings.local.json").write_text(
        json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}})
    )
    (root / ".kimi" / "commands" / "ship.md").write_text("Ship it: !`git log -1`\n")
    return root


def test_each_ask_names_the_file_it_comes_from(folder: Path) -> None:
    state = trust.assess(folder)
    sources = {ask.key: source_of(ask.key, state.project) for ask in state.asks}
    assert sources["yolo"] == ".kimi/config.toml"
    assert sources["base_url"] == ".kimi/config.toml"
    assert sources["mcp:near"] == ".kimi/mcp.json"
    assert sources["mcp_config:extra.json"] == "extra.json (named by .kimi/config.toml's mcp_config)"
    assert sources["claude.hooks"] == ".claude/settings.local.json"  # the one present, not settings.json
    assert sources["hooks.scripts"] == ".kimi/config.toml"  # tools/hook.sh, named by a hook of the config
    assert sources["commands:.kimi/commands/ship.md"] == ".kimi/commands/ship.md"
    assert all(sources.values())  # every ask names a file


def test_a_server_of_an_mcp_config_file_names_that_file(folder: Path) -> None:
    (folder / "srv.py").write_text("print('x')\n")
    (folder / "extra.json").write_text(json.dumps({"mcpServers": {"far": {"command": "python3", "args": ["srv.py"]}}}))
    state = trust.assess(folder)
    files = [ask.key for ask in state.asks if ask.key.endswith(":files")]
    assert files, [ask.key for ask in state.asks]
    assert {source_of(key, state.project) for key in files} == {"extra.json"}
