"""A folder's MCP server asks for the user's credentials with a pattern in `pass_env`.

`pass_env` is a field a trusted folder may set (kimi_cli.hostsafe.trust_rules.MCP_SERVER_FIELDS), documented as the
names of variables the sandboxed server may see. Handed to the sandbox's env_allow as it was, a pattern such as "*"
passed every variable kimi holds (cloud keys, tokens, database URLs) but the key variables themselves. A pattern is
refused as `--pass-env` refuses it (kimi_cli.sandbox.env.pass_env_refusal); a name still passes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_cli.extensions.mcp.config import ServerConfig
from kimi_cli.extensions.mcp.sandboxed import server_policy

ENVIRON = {
    "PATH": "/usr/bin:/bin",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GH_PAT": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "DATABASE_URL": "postgres://admin:hunter2@db.internal/prod",
    "PROBE_SETTING": "plain value",
    "MOONSHOT_API_KEY": "sk-the-users-own-key-000000000000",
}


@pytest.fixture
def kimi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMI_HOME", str(tmp_path / "kimi"))
    return tmp_path / "kimi"


@pytest.mark.parametrize("patterns", [["*"], ["*_KEY", "GH_*", "DATABASE_UR?"], ["[A-Z]*"]])
def test_a_pattern_in_pass_env_passes_no_credential(kimi_home: Path, tmp_path: Path, patterns: list[str]) -> None:
    cfg = ServerConfig(command="true", pass_env=patterns)
    env = server_policy("probe", cfg, tmp_path, environ=dict(ENVIRON)).env
    for name in ("AWS_SECRET_ACCESS_KEY", "GH_PAT", "DATABASE_URL", "MOONSHOT_API_KEY"):
        assert name not in env, (patterns, name)
    assert not any(value in str(env) for value in ENVIRON.values() if value != "/usr/bin:/bin")


def test_a_named_variable_in_pass_env_still_passes_and_a_key_never(kimi_home: Path, tmp_path: Path) -> None:
    cfg = ServerConfig(command="true", pass_env=["PROBE_SETTING", "MOONSHOT_API_KEY"])
    env = server_policy("probe", cfg, tmp_path, environ=dict(ENVIRON)).env
    assert env["PROBE_SETTING"] == "plain value"
    assert "MOONSHOT_API_KEY" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
