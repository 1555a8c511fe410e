"""Any OpenAI-compatible server: a base URL alone picks the openai provider, and the window is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripted_server import ScriptedModelServer
from support import run_kimi


def bare_env(env: dict, server: ScriptedModelServer) -> dict:
    """What a user types for a local server: the URL, nothing else (no provider, no key)."""
    return {**env, "KIMI_BASE_URL": server.base_url}


def test_a_base_url_alone_selects_the_openai_provider_with_no_key(repo: Path, env: dict) -> None:
    with ScriptedModelServer([{"text": "hello from a local server"}]) as server:
        proc = run_kimi(["-p", "hi", "--no-pack"], repo, bare_env(env, server))
    assert proc.returncode == 0, proc.stderr
    assert "hello from a local server" in proc.stdout
    assert "authorization" not in server.headers[0]


@pytest.mark.parametrize(
    ("model_info", "props", "source"),
    [
        ({"max_model_len": 8192}, None, "/v1/models"),  # vLLM
        ({"meta": {"n_ctx": 8192, "n_ctx_train": 32768}}, None, "/v1/models"),  # llama.cpp
        ({}, {"default_generation_settings": {"n_ctx": 8192}}, "/props"),  # llama.cpp, older
    ],
)
def test_the_context_window_is_asked_from_the_server_and_caps_the_request(
    repo: Path, env: dict, model_info: dict, props: dict | None, source: str
) -> None:
    with ScriptedModelServer([{"text": "ok"}], model_info=model_info, props=props) as server:
        version = run_kimi(["doctor"], repo, bare_env(env, server))
        assert f"context 8,192 tokens (from the server's {source})" in version.stdout
        proc = run_kimi(["-p", "hi"], repo, bare_env(env, server))
    assert proc.returncode == 0, proc.stderr
    body = server.requests[0]
    assert body["max_completion_tokens"] <= 8192  # the K3 family's budget field (the default model)
    assert len(body["messages"][0]["content"]) < 8192 * 4  # the pack fits the small window


def test_context_length_flag_and_variable_win_over_the_server(repo: Path, env: dict) -> None:
    with ScriptedModelServer([{"text": "ok"}], model_info={"max_model_len": 8192}) as server:
        version = run_kimi(["doctor"], repo, {**bare_env(env, server), "KIMI_CONTEXT_LENGTH": "32768"})
        assert "context 32,768 tokens (from configuration" in version.stdout
        proc = run_kimi(["-p", "hi", "--context-length", "4096"], repo, bare_env(env, server))
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0]["max_completion_tokens"] <= 4096


def test_a_moonshot_url_still_needs_a_key(repo: Path, env: dict) -> None:
    proc = run_kimi(["-p", "hi"], repo, {**env, "KIMI_BASE_URL": "https://api.moonshot.ai/v1"})
    assert proc.returncode == 2 and "no API key for provider 'moonshot'" in proc.stderr
