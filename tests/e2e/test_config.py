"""Configuration layering and the messages a user sees when it is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_cli.config import load_config, resolve_endpoint
from kimi_cli.errors import ConfigError

from scripted_server import ScriptedModelServer
from support import run_kimi, trust_folder


def test_layers_apply_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".kimi").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KIMI_HOME", raising=False)
    (home / ".kimi" / "config.toml").write_text('model = "user"\nmax_steps = 7\n[retry]\nmax_retries = 2\n')
    ws = tmp_path / "ws"
    (ws / ".kimi").mkdir(parents=True)
    (ws / ".kimi" / "config.toml").write_text('model = "project"\n[retry]\nbase_delay = 0.5\n')
    cfg = load_config(ws, {}, environ={})
    assert (cfg.model, cfg.max_steps, cfg.retry.max_retries, cfg.retry.base_delay) == ("project", 7, 2, 0.5)
    cfg = load_config(ws, {}, environ={"KIMI_MODEL": "env"})
    assert cfg.model == "env"
    cfg = load_config(ws, {"model": "flag"}, environ={"KIMI_MODEL": "env"})
    assert cfg.model == "flag"


def test_bad_value_names_file_and_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    ws = tmp_path / "ws"
    (ws / ".kimi").mkdir(parents=True)
    bad = ws / ".kimi" / "config.toml"
    bad.write_text('[context]\ncompact_at = "lots"\n')  # a limit (retry.*) that cannot be read is dropped instead
    with pytest.raises(ConfigError) as info:
        load_config(ws, {}, environ={})
    assert str(bad) in str(info.value) and "context.compact_at" in str(info.value)


def test_unknown_key_and_broken_toml_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    ws = tmp_path / "ws"
    (ws / ".kimi").mkdir(parents=True)
    (ws / ".kimi" / "config.toml").write_text("modle = 'x'\n")
    with pytest.raises(ConfigError, match="modle"):
        load_config(ws, {}, environ={})
    (ws / ".kimi" / "config.toml").write_text("model = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(ws, {}, environ={})


def test_moonshot_without_key_says_how_to_set_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = load_config(tmp_path, {}, environ={})
    with pytest.raises(ConfigError, match="KIMI_API_KEY"):
        resolve_endpoint(cfg, environ={})
    assert resolve_endpoint(cfg, environ={"MOONSHOT_API_KEY": "k"}).api_key == "k"


def test_local_provider_needs_no_key_and_defaults_to_the_engine(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = load_config(tmp_path, {"provider": "local"}, environ={})
    endpoint = resolve_endpoint(cfg, environ={})
    assert endpoint.base_url == "http://127.0.0.1:8000/v1"
    assert "api_key" not in repr(endpoint)


def test_cli_bad_config_exits_2_with_the_message(repo: Path, env: dict) -> None:
    (repo / ".kimi").mkdir()
    (repo / ".kimi" / "config.toml").write_text("max_steps = 0\n")
    proc = run_kimi(["-p", "x"], repo, {**env, "KIMI_API_KEY": "k"})
    assert proc.returncode == 2
    assert "max_steps" in proc.stderr and "config.toml" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_missing_key_exits_2(repo: Path, env: dict) -> None:
    proc = run_kimi(["-p", "x"], repo, env)
    assert proc.returncode == 2 and "KIMI_API_KEY" in proc.stderr


def test_an_exported_key_beats_api_key_in_every_config_file(
    repo: Path, env: dict, home: Path, server: ScriptedModelServer
) -> None:
    """flags > env > project > user (DESIGN.md): the key a request carries is the exported one while any is."""
    user = home / ".kimi" / "config.toml"
    user.write_text('api_key = "sk-user-file-key-0123456789"\n' + user.read_text())
    (repo / ".kimi").mkdir()
    (repo / ".kimi" / "config.toml").write_text('api_key = "sk-folder-file-key-0123456789"\n')
    trust_folder(repo, home)
    sent = {**env, "KIMI_PROVIDER": "openai", "KIMI_BASE_URL": server.base_url}  # run_kimi(server=) exports a key
    server.add({"text": "ok"})
    proc = run_kimi(["-p", "hi"], repo, {**sent, "OPENAI_API_KEY": "sk-exported-key-0123456789"})
    assert proc.returncode == 0, proc.stderr
    assert server.headers[-1]["authorization"] == "Bearer sk-exported-key-0123456789"
    server.add({"text": "ok"})  # nothing exported: the trusted folder's file, over the user's
    assert run_kimi(["-p", "hi"], repo, sent).returncode == 0
    assert server.headers[-1]["authorization"] == "Bearer sk-folder-file-key-0123456789"
    (repo / ".kimi" / "config.toml").unlink()
    server.add({"text": "ok"})
    assert run_kimi(["-p", "hi"], repo, sent).returncode == 0
    assert server.headers[-1]["authorization"] == "Bearer sk-user-file-key-0123456789"
