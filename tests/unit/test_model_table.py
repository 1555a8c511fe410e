"""The model table, reasoning fields, costs, and the context window an endpoint reports, in-process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kimi_cli.config import Endpoint, RetrySettings
from kimi_cli.llm import endpoint_info
from kimi_cli.llm.costs import cost_of, first_request_line, rates_for
from kimi_cli.llm.models import known_ids, lookup, reasoning_fields, resolve_effort, with_context
from kimi_cli.llm.provider import ChatProvider
from kimi_cli.llm.types import Usage


def test_known_models_have_windows_prices_and_a_reasoning_control() -> None:
    assert "kimi-k3.1-pro" in known_ids()
    info = lookup("moonshotai/KIMI-K3.1-PRO")  # a router's vendor prefix, any case
    assert info.known and info.reasoning == "effort" and info.priced and info.context_window > 100_000
    assert "Kimi K3.1 Pro" in info.describe() and "reasoning_effort" in info.describe()
    unknown = lookup("some-local-model")
    assert not unknown.known and unknown.reasoning == "none" and "no reasoning control" in unknown.describe()
    assert with_context(info, 1234).context_window == 1234


def test_the_local_engine_and_the_users_config_layer_over_the_table() -> None:
    info = lookup("kimi-k3.1-pro", "local", {"kimi-k3.1-pro": {"context_window": 4096, "price_input": 9.0}})
    assert info.context_window == 4096 and info.price_input == 9.0
    assert "the local engine" in info.source and "your config" in info.source
    assert lookup("my-model", overrides={"my-model": {"reasoning": "thinking"}}).known


def test_effort_goes_as_reasoning_effort_or_thinking_or_not_at_all() -> None:
    k3 = lookup("kimi-k3.1-pro")
    assert reasoning_fields(k3, "low") == ({"reasoning_effort": "low"}, "")
    k2 = lookup("kimi-k2.6")
    fields, note = reasoning_fields(k2, "high")
    assert fields == {"thinking": {"type": "enabled"}} and note == ""
    assert reasoning_fields(lookup("unknown-x"), "max") == ({}, "")
    code = lookup("kimi-k2.7-code")
    fields, note = reasoning_fields(code, "low")
    assert fields == {"thinking": {"type": "enabled"}} and "always thinks" in note
    narrow = with_context(k3, 1)
    object.__setattr__(narrow, "effort_levels", ("low", "high"))
    assert reasoning_fields(narrow, "max")[0] == {"reasoning_effort": "high"}
    assert resolve_effort("low", "headless") == "low" and resolve_effort(None, "headless") == "max"
    assert resolve_effort("bogus", "nowhere") == "high"


def test_costs_split_cache_hits_and_misses_and_config_prices_win() -> None:
    info = lookup("kimi-k3.1-pro")
    rates = rates_for(info, SimpleNamespace(input=2.0, cached_input=None, output=None))
    cost = cost_of({"prompt_tokens": 1_000_000, "cached_tokens": 750_000, "completion_tokens": 1000}, rates)
    assert (cost.uncached_tokens, cost.cached_tokens, cost.hit_ratio) == (250_000, 750_000, 0.75)
    assert cost.uncached_usd == pytest.approx(0.5) and "[pricing]" in rates.source
    assert cost.as_dict()["total_usd"] == pytest.approx(cost.total_usd, abs=1e-6)
    assert "75% hit" in cost.summary() and "$" in cost.summary()
    free = cost_of({}, rates_for(lookup("unknown-x")))
    assert "cost n/a" in free.summary() and free.hit_ratio == 0.0
    assert first_request_line(None).endswith("none sent yet")
    assert "no usage" in first_request_line(Usage())
    assert first_request_line(Usage(100, 1, 80)).startswith("first request hit the prompt cache: 80 of 100")


def test_each_entry_says_where_its_facts_come_from_and_prices_cache_writes() -> None:
    for model in known_ids():
        info = lookup(model)
        assert info.facts_source, f"{model}: no `source` in models.toml"
        k3 = model.startswith("kimi-k3")
        assert info.answer_field == ("max_completion_tokens" if k3 else "max_tokens"), model
        assert 0 < info.min_answer <= info.max_output, model
        if k3:  # a 5-minute write costs a miss, a 1-hour write twice that
            assert info.price_cache_write == info.price_input and info.price_cache_write_1h == 2 * info.price_input
    assert lookup("unknown-x").facts_source.startswith("safe defaults")
    assert "cache write (5 min)" in lookup("kimi-k3.1-pro").describe()


def test_cache_writes_are_read_from_the_usage_and_priced_at_the_write_rate() -> None:
    from kimi_cli.llm.assemble import ChunkAssembler, StreamCallbacks

    assembler = ChunkAssembler(StreamCallbacks())
    details = {"cached_tokens": 100, "cache_write_tokens": 400}
    assembler.feed({"choices": [], "usage": {"prompt_tokens": 1000, "prompt_tokens_details": details}})
    usage = assembler.usage
    assert (usage.cached_tokens, usage.cache_write_tokens) == (100, 400)
    assert Usage.from_dict(usage.as_dict()) == usage and "cache_write_tokens" not in Usage(1, 1, 1).as_dict()
    from dataclasses import replace

    rates = replace(rates_for(lookup("kimi-k3")), cache_write=6.0)  # a write priced apart from a miss
    cost = cost_of(usage.as_dict(), rates)
    assert cost.written_tokens == 400 and cost.uncached_usd == pytest.approx((500 * 3.0 + 400 * 6.0) / 1e6)
    assert "400 of them cache writes" in cost.summary() and cost.as_dict()["input_cache_write_tokens"] == 400
    assert "$6 write (5 min)" in rates.line() and "$6 write (1 h)" in rates.line()


@pytest.fixture
def server() -> Iterator[Any]:
    from scripted_server import ScriptedModelServer

    srv = ScriptedModelServer(model_info={"max_model_len": 32_768}).start()
    yield srv
    srv.stop()


def test_the_window_comes_from_the_servers_models_list_and_is_cached(server: Any) -> None:
    endpoint = Endpoint("openai", server.base_url, "kimi-test", "EMPTY")
    assert endpoint_info.resolve_context_length(endpoint, None) == (32_768, "the server's /v1/models")
    server.stop()
    window, source = endpoint_info.resolve_context_length(endpoint, None)
    assert window == 32_768 and source.endswith("(cached)")
    assert endpoint_info.resolve_context_length(endpoint, 5000)[0] == 5000


def test_a_server_that_says_nothing_falls_back_to_the_table() -> None:
    endpoint = Endpoint("openai", "http://127.0.0.1:9/v1", "kimi-k3.1-pro", "EMPTY")
    window, source = endpoint_info.resolve_context_length(endpoint, None)
    assert window == lookup("kimi-k3.1-pro").context_window and "model table" in source
    unknown = Endpoint("openai", "http://127.0.0.1:9/v1", "who-knows", "EMPTY")
    assert "safe default" in endpoint_info.resolve_context_length(unknown, None)[1]


def test_windows_are_read_from_each_servers_own_shape() -> None:
    models = {"data": [{"id": "a", "meta": {"n_ctx_train": 8192}}, {"id": "b", "context_length": 4096}]}
    assert endpoint_info.context_from_models(models, "b") == 4096
    assert endpoint_info.context_from_models(models, "a") == 8192
    assert endpoint_info.context_from_models(models, "a", include_training=False) is None
    assert endpoint_info.context_from_models({"data": []}, "a") is None
    assert endpoint_info.context_from_models(models, "zzz") is None
    assert endpoint_info.context_from_props({"default_generation_settings": {"n_ctx": 2048}}) == 2048
    assert endpoint_info.context_from_props({"n_ctx": 1024}) == 1024 and endpoint_info.context_from_props([]) is None


def test_llama_cpp_props_answer_when_the_models_list_does_not() -> None:
    from scripted_server import ScriptedModelServer

    with ScriptedModelServer(model_info={}, props={"default_generation_settings": {"n_ctx": 6000}}) as srv:
        endpoint = Endpoint("local", srv.base_url, "kimi-test", "EMPTY")
        assert endpoint_info.ask_server(endpoint) == (6000, "the server's /props")


def test_the_provider_sends_the_effort_and_a_cache_key_per_workspace_and_prefix(server: Any, tmp_path: Path) -> None:
    server.add({"text": "one"}, {"text": "two"})
    endpoint = Endpoint("openai", server.base_url, "kimi-k3.1-pro", "EMPTY")
    retry = RetrySettings(max_retries=0)
    told: list[str] = []
    provider = ChatProvider(endpoint, retry, "s", effort="max", cache_scope=str(tmp_path))
    provider.on_notice = told.append
    messages = [{"role": "system", "content": "prefix"}, {"role": "user", "content": "u"}]

    async def main() -> None:
        await provider.complete(messages, [])
        provider.set_model(Endpoint("openai", server.base_url, "kimi-k2.7-code", "EMPTY"), lookup("kimi-k2.7-code"))
        provider.effort = "low"
        await provider.complete(messages, [])
        await provider.aclose()

    asyncio.run(main())
    first, second = server.requests
    assert first["reasoning_effort"] == "max" and first["prompt_cache_key"].startswith("kimi-")
    assert second["thinking"] == {"type": "enabled"} and "reasoning_effort" not in second
    assert second["prompt_cache_key"] == first["prompt_cache_key"] and len(told) == 1
    assert json.loads(json.dumps(first))["model"] == "kimi-k3.1-pro"
