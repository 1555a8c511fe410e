"""Kimi's own API: the model table, reasoning effort as each model takes it, and costs split by the cache.

The scripted server records every request body, so each test reads exactly what kimi sent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimi_cli.llm.costs import cost_of, rates_for
from kimi_cli.llm.models import lookup, reasoning_fields, resolve_effort

from scripted_server import ScriptedModelServer
from support import git, result_json, run_kimi

TRANSPORTS = pytest.mark.parametrize("transport", ["direct", "httpx", "openai"])


def with_model(env: dict, model: str, transport: str = "httpx") -> dict:
    return {**env, "KIMI_MODEL": model, "KIMI_TRANSPORT": transport}


# --- the table -----------------------------------------------------------------------------------------


def test_every_model_of_the_issue_is_in_the_table_with_prices_and_limits() -> None:
    for model in ("kimi-k3.1-pro", "kimi-k3.1-pro-highspeed", "kimi-k3", "kimi-k2.7-code", "kimi-k2.6", "kimi-k2.5"):
        info = lookup(model)
        assert info.known and info.priced, model
        assert info.price_cached_input < info.price_input < info.price_output, model
        assert info.max_tools == 128 and info.image_patch == 14 and info.image_long_edge <= 2048
        assert info.context_window >= 262_144 and info.max_request_bytes > 0
    assert lookup("kimi-k3.1-pro").reasoning == "effort"
    assert lookup("kimi-k2.6").reasoning == "thinking"
    assert lookup("kimi-k2.7-code").thinking_can_disable is False


def test_lookup_by_vendor_prefix_local_engine_and_user_overrides() -> None:
    assert lookup("moonshotai/Kimi-K3.1-Pro").id == "moonshotai/Kimi-K3.1-Pro"
    assert lookup("moonshotai/Kimi-K3.1-Pro").reasoning == "effort"
    local = lookup("kimi-k3.1-pro", "local")  # the engine's served name
    assert local.context_window == 1_048_576 and not local.priced and local.reasoning == "none"
    unknown = lookup("llama-3-8b")
    assert not unknown.known and unknown.reasoning == "none" and unknown.context_window == 131_072
    mine = lookup("llama-3-8b", overrides={"llama-3-8b": {"reasoning": "effort", "effort_levels": ["low", "high"]}})
    assert mine.known and reasoning_fields(mine, "low") == ({"reasoning_effort": "low"}, "")
    assert reasoning_fields(mine, "max")[0] == {"reasoning_effort": "high"}  # the nearest level it has


def test_effort_defaults_per_mode() -> None:
    assert resolve_effort(None, "interactive") == "high" and resolve_effort(None, "acp") == "high"
    assert resolve_effort(None, "headless") == "max" and resolve_effort(None, "ci") == "max"
    assert resolve_effort("low", "headless") == "low"


def test_version_shows_the_entry_in_use(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    env = {**env, "KIMI_BASE_URL": server.base_url, "KIMI_PROVIDER": "openai", "KIMI_MODEL": "kimi-k2.6"}
    out = run_kimi(["doctor"], repo, env).stdout
    assert "model table: Kimi K2.6 [kimi-k2.6]" in out and "$0.95 in / $0.16 cached / $4 out" in out
    assert "thinking enabled|disabled" in out


# --- effort on the wire --------------------------------------------------------------------------------


@TRANSPORTS
def test_effort_low_reaches_k3_1_pro_as_reasoning_effort(
    repo: Path, env: dict, server: ScriptedModelServer, transport: str
) -> None:
    server.add({"text": "ok"})
    proc = run_kimi(["-p", "hi", "--effort", "low"], repo, with_model(env, "kimi-k3.1-pro", transport), server)
    assert proc.returncode == 0, proc.stderr
    body = server.requests[0]
    assert body["reasoning_effort"] == "low" and "thinking" not in body


@TRANSPORTS
def test_a_k2_model_gets_a_thinking_field_and_no_reasoning_effort(
    repo: Path, env: dict, server: ScriptedModelServer, transport: str
) -> None:
    server.add({"text": "ok"}, {"text": "ok"})
    assert (
        run_kimi(["-p", "hi", "--effort", "low"], repo, with_model(env, "kimi-k2.6", transport), server).returncode == 0
    )
    assert (
        run_kimi(["-p", "hi", "--effort", "max"], repo, with_model(env, "kimi-k2.6", transport), server).returncode == 0
    )
    low, high = server.requests
    assert low["thinking"] == {"type": "disabled"} and "reasoning_effort" not in low
    assert high["thinking"] == {"type": "enabled"} and "reasoning_effort" not in high


def test_k2_7_code_never_gets_thinking_disabled_and_the_user_is_told(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "ok"})
    proc = run_kimi(["-p", "hi", "--effort", "low", "--output-format", "stream-json"], repo,
                    with_model(env, "kimi-k2.7-code"), server)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert server.requests[0]["thinking"] == {"type": "enabled"}
    notices = [json.loads(x) for x in proc.stdout.splitlines() if '"notice"' in x]
    assert any("always thinks" in n["message"] for n in notices)


def test_an_unknown_openai_compatible_model_gets_neither_unless_configured(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    server.add({"text": "ok"}, {"text": "ok"})
    assert run_kimi(["-p", "hi", "--effort", "low"], repo, with_model(env, "llama-3-8b"), server).returncode == 0
    first = server.requests[0]
    assert "reasoning_effort" not in first and "thinking" not in first
    config = home / ".kimi" / "config.toml"
    config.write_text(
        config.read_text() + '\n[models."llama-3-8b"]\nreasoning = "effort"\neffort_levels = ["low", "high"]\n'
    )
    assert run_kimi(["-p", "hi", "--effort", "low"], repo, with_model(env, "llama-3-8b"), server).returncode == 0
    assert server.requests[1]["reasoning_effort"] == "low"


def test_headless_defaults_to_max_and_env_and_config_choose(
    repo: Path, env: dict, server: ScriptedModelServer, home: Path
) -> None:
    server.add({"text": "ok"}, {"text": "ok"}, {"text": "ok"})
    assert run_kimi(["-p", "hi"], repo, env, server).returncode == 0
    assert run_kimi(["-p", "hi"], repo, {**env, "KIMI_EFFORT": "low"}, server).returncode == 0
    config = home / ".kimi" / "config.toml"
    config.write_text('effort = "high"\n' + config.read_text())  # top level, before [retry]
    assert run_kimi(["-p", "hi"], repo, env, server).returncode == 0
    assert [r["reasoning_effort"] for r in server.requests] == ["max", "low", "high"]


def test_a_bad_effort_is_a_usage_error(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    proc = run_kimi(["-p", "hi", "--effort", "medium"], repo, env, server)
    assert proc.returncode == 2 and "--effort must be low, high or max" in proc.stderr
    assert server.requests == []


@TRANSPORTS
def test_a_400_naming_the_field_drops_it_for_the_session_and_says_so_once(
    repo: Path, env: dict, server: ScriptedModelServer, transport: str
) -> None:
    reject = {"error": 400, "body": {"error": {"message": "Unrecognized request argument supplied: reasoning_effort"}}}
    from support import tool_call

    call = tool_call("ReadFile", {"path": "calc.py"}, "r1")
    server.add(reject, {"tool_calls": [call]}, {"text": "done"})
    proc = run_kimi(["-p", "read", "--output-format", "stream-json"], repo, with_model(env, "kimi-k3", transport),
                    server)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [("reasoning_effort" in r) for r in server.requests] == [True, False, False]
    notices = [json.loads(x)["message"] for x in proc.stdout.splitlines() if '"notice"' in x]
    assert len([n for n in notices if "refused the reasoning_effort field" in n]) == 1


def test_a_400_about_reasoning_content_does_not_drop_thinking(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    # Moonshot's answer to a history without reasoning_content names "thinking" but does not refuse the field.
    body = {"error": {"message": "thinking is enabled but reasoning_content is missing in assistant tool call message"}}
    server.add({"error": 400, "body": body})
    proc = run_kimi(["-p", "hi"], repo, with_model(env, "kimi-k2.6"), server)
    assert proc.returncode == 2 and "reasoning_content is missing" in proc.stderr
    assert len(server.requests) == 1


# --- costs and the prompt cache ------------------------------------------------------------------------


def test_json_result_prices_cache_hits_and_misses_at_the_tables_rates(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    server.add({"text": "ok", "usage": {"prompt_tokens": 100_000, "completion_tokens": 2_000, "cached_tokens": 90_000}})
    proc = run_kimi(["-p", "hi", "--output-format", "json"], repo, with_model(env, "kimi-k3.1-pro"), server)
    assert proc.returncode == 0, proc.stderr
    cost = result_json(proc)["cost"]
    assert cost["input_cached_tokens"] == 90_000 and cost["input_uncached_tokens"] == 10_000
    assert cost["input_uncached_usd"] == pytest.approx(10_000 * 2.00 / 1e6)
    assert cost["input_cached_usd"] == pytest.approx(90_000 * 0.20 / 1e6)
    assert cost["total_usd"] == pytest.approx((10_000 * 2.0 + 90_000 * 0.2 + 2_000 * 10.0) / 1e6)
    assert result_json(proc)["first_request"] == {"prompt_tokens": 100_000, "cached_tokens": 90_000, "cache_hit": True}


def test_pricing_in_the_config_still_overrides_the_table(home: Path, tmp_path: Path) -> None:
    from kimi_cli.config import load_config

    (home / ".kimi" / "config.toml").write_text("[pricing]\ninput = 1.0\n")
    import os

    old = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    try:
        config = load_config(tmp_path)
    finally:
        os.environ["HOME"] = old or ""
    rates = rates_for(lookup("kimi-k3.1-pro"), config.pricing)
    assert (rates.input, rates.cached_input, rates.output) == (1.0, 0.20, 10.0) and "[pricing]" in rates.source
    cost = cost_of({"prompt_tokens": 1000, "cached_tokens": 400, "completion_tokens": 10}, rates)
    assert (cost.uncached_tokens, cost.cached_tokens) == (600, 400)


def test_the_cache_key_is_per_workspace_and_pack_not_per_session(
    repo: Path, env: dict, server: ScriptedModelServer, tmp_path: Path
) -> None:
    server.add({"text": "a"}, {"text": "b"}, {"text": "c"})
    for _ in range(2):
        assert run_kimi(["-p", "explain calc.py", "--output-format", "json"], repo, env, server).returncode == 0
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    assert run_kimi(["-p", "explain calc.py"], other, env, server).returncode == 0
    first, second, third = (r["prompt_cache_key"] for r in server.requests)
    assert first == second and first != third
    assert server.requests[0]["messages"][0] == server.requests[1]["messages"][0]  # the same prefix bytes


# --- ACP ---------------------------------------------------------------------------------------------------


def test_acp_offers_effort_as_a_config_option_and_applies_it(
    repo: Path, env: dict, server: ScriptedModelServer
) -> None:
    import acp

    from acp_support import RecordingClient, run

    server.add({"text": "one"}, {"text": "two"})

    async def flow(conn: object, proc: object) -> tuple:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])  # type: ignore[attr-defined]
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=[acp.text_block("hi")])  # type: ignore[attr-defined]
        changed = await conn.set_config_option(config_id="effort", session_id=sid, value="low")  # type: ignore[attr-defined]
        await conn.prompt(session_id=sid, prompt=[acp.text_block("again")])  # type: ignore[attr-defined]
        return session.config_options, changed.config_options

    offered, changed = run(repo, env, server, RecordingClient(), flow)
    assert offered[0].id == "effort" and offered[0].current_value == "high"  # an editor session: high
    assert [o.value for o in offered[0].options] == ["low", "high", "max"]
    assert changed[0].current_value == "low"
    assert [r["reasoning_effort"] for r in server.requests] == ["high", "low"]


def test_acp_effort_is_kept_with_the_session(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    """The effort an editor sets is the session's, as the terminal's /effort is: loading the session again in
    a new kimi acp, and `kimi -p --continue`, go on with it (neither is the mode's default: high, max)."""
    import acp

    from acp_support import RecordingClient, run

    server.add({"text": "one"}, {"text": "two"}, {"text": "three"})

    async def first(conn: object, proc: object) -> str:
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])  # type: ignore[attr-defined]
        sid = session.session_id
        await conn.set_config_option(config_id="effort", session_id=sid, value="low")  # type: ignore[attr-defined]
        await conn.prompt(session_id=sid, prompt=[acp.text_block("hi")])  # type: ignore[attr-defined]
        return str(sid)

    sid = run(repo, env, server, RecordingClient(), first)

    async def again(conn: object, proc: object) -> object:
        loaded = await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])  # type: ignore[attr-defined]
        await conn.prompt(session_id=sid, prompt=[acp.text_block("again")])  # type: ignore[attr-defined]
        return loaded.config_options

    options = run(repo, env, server, RecordingClient(), again)
    assert options[0].current_value == "low"
    assert run_kimi(["-p", "and again", "--continue"], repo, env, server).returncode == 0
    assert [r["reasoning_effort"] for r in server.requests] == ["low", "low", "low"]


# --- the terminal --------------------------------------------------------------------------------------------


def test_effort_model_and_cost_commands_in_the_terminal(repo: Path, env: dict, server: ScriptedModelServer) -> None:
    from terminal import PROMPT, finish, spawn

    server.add(
        {"text": "first", "usage": {"prompt_tokens": 10_000, "completion_tokens": 100, "cached_tokens": 9_000}},
        {"text": "second"},
        {"text": "spare"},  # for anything else the session may ask at exit (a title)
    )
    child = spawn(repo, env, server)
    child.send("hi\r")
    child.expect("first")
    child.expect(PROMPT)
    child.send("/effort low\r")
    child.expect("effort low: sent as reasoning_effort=low")
    child.send("/model\r")
    child.expect(r"model table: Kimi K3\.1 Pro \[kimi-k3\.1-pro\]")
    child.send("/cost\r")
    child.expect("9,000 cache hits")
    child.expect("first request hit the prompt cache")
    child.send("again\r")
    child.expect("second")
    child.expect(PROMPT)
    assert finish(child) == 0
    assert [r["reasoning_effort"] for r in server.requests[:2]] == ["high", "low"]
