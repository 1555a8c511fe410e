"""Hostile JSON in the files kimi reads at start: an MCP config and the trust store 100,000 arrays deep.

json.loads raised RecursionError on them, which no reader caught (they caught ValueError): `kimi -p` ended
in a traceback before it started. Every such file is now read with the bounded reader (util/jsonsafe), so the
MCP config is a configuration error that names the file, and a trust store that cannot be read is no trust
(the folder asks again). Beside them: the ordinary files still work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimi_cli.errors import ConfigError
from kimi_cli.extensions.mcp.config import read_file
from kimi_cli.hostsafe import trust

from scripted_server import ScriptedModelServer
from support import run_kimi

DEEP = "[" * 100_000 + "]" * 100_000


def test_kimi_p_with_an_mcp_config_100000_arrays_deep_stops_with_a_config_error(
    repo: Path, home: Path, env: dict, server: ScriptedModelServer
) -> None:
    (home / ".kimi" / "mcp.json").write_text('{"mcpServers": ' + DEEP + "}")
    proc = run_kimi(["-p", "hi"], repo, env, server)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "invalid MCP configuration" in proc.stderr and "mcp.json" in proc.stderr


def test_an_ordinary_mcp_config_is_read(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"docs": {"command": "true", "args": ["[x]"]}}}))
    assert read_file(path) == {"docs": {"command": "true", "args": ["[x]"]}}
    path.write_text('{"mcpServers": {"docs": {"command": "true", "timeout": NaN}}}')  # not JSON
    with pytest.raises(ConfigError, match="not valid JSON"):
        read_file(path)


def test_a_trust_store_100000_arrays_deep_is_no_trust_and_is_written_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIMI_HOME", str(tmp_path / "kimi-home"))
    trust._DECIDED.clear()
    folder = tmp_path / "ws"
    (folder / ".kimi").mkdir(parents=True)
    (folder / ".kimi" / "config.toml").write_text("yolo = true\n")
    (tmp_path / "kimi-home").mkdir()
    trust.store_path().write_text(DEEP)
    assert trust.trusted_folders() == {} and not trust.assess(folder).trusted
    trust.remember(trust.assess(folder))  # the legitimate use: trusting writes a store that reads back
    assert trust.assess(folder).trusted and str(folder.resolve()) in trust.trusted_folders()
