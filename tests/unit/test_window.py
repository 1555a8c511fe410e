"""Requests fit the window (issue 41): the answer budget's field per model family, the server's own token count
per block, a window learned from a server's refusal (once), compaction that never grows a request, and a pack
budget larger than the window clamped with a notice. The model client runs against the scripted server on
loopback; the session's context is the real one over a real repository."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kimi_cli.config import Endpoint, RetrySettings
from kimi_cli.context.fitting import WindowTooSmall
from kimi_cli.context.request_size import RequestMeter
from kimi_cli.errors import KimiError
from kimi_cli.llm.failures import ContextOverflow
from kimi_cli.llm.models import lookup, with_context
from kimi_cli.llm.provider import ChatProvider
from kimi_cli.llm.server_tokens import ServerTokenizer
from kimi_cli.llm.window import answer_budget, window_in

from fakes import FakeProvider, agent_for, context_for, text, user
from scripted_server import ScriptedModelServer, count_tokens

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "Probe", "description": "d", "parameters": {"type": "object"}}}]


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    srv = ScriptedModelServer().start()
    yield srv
    srv.stop()


def provider_for(server: ScriptedModelServer, model: str, provider: str = "openai", window: int = 0) -> ChatProvider:
    endpoint = Endpoint(provider, server.base_url, model, "EMPTY")
    info = lookup(model, provider)
    info = with_context(info, window) if window else info
    return ChatProvider(endpoint, RetrySettings(max_retries=0), "s", model_info=info)


def send(provider: ChatProvider, max_tokens: int | None, messages: list[dict[str, Any]] = MESSAGES) -> Any:
    async def main() -> Any:
        try:
            return await provider.complete(messages, TOOLS, max_tokens=max_tokens)
        finally:
            await provider.aclose()

    return asyncio.run(main())


@pytest.mark.parametrize(
    ("model", "provider", "field"),
    [
        ("kimi-k3.1-pro", "moonshot", "max_completion_tokens"),
        ("kimi-k3.1-pro-highspeed", "openai", "max_completion_tokens"),
        ("kimi-k3", "openai", "max_completion_tokens"),
        ("kimi-k2.6", "moonshot", "max_tokens"),
        ("kimi-k2.7-code", "openai", "max_tokens"),
        ("some-local-model", "openai", "max_tokens"),
        ("kimi-k3.1-pro", "local", "max_tokens"),  # the local engine (vLLM) is asked the OpenAI way
    ],
)
def test_the_answer_budget_goes_in_the_field_the_model_family_takes(
    server: ScriptedModelServer, model: str, provider: str, field: str
) -> None:
    server.add({"text": "ok"})
    send(provider_for(server, model, provider), 700)
    body = server.requests[0]
    other = {"max_tokens", "max_completion_tokens"} - {field}
    assert body[field] == 700 and not other & set(body)


def test_every_request_carries_a_budget_within_the_models_cap_and_the_window(server: ScriptedModelServer) -> None:
    server.add({"text": "a"}, {"text": "b"}, {"text": "c"})
    send(provider_for(server, "kimi-k2.6"), 10_000_000)  # more than the table's output cap
    assert server.requests[0]["max_tokens"] == lookup("kimi-k2.6").max_output
    small = provider_for(server, "kimi-k3", window=8192)
    send(small, None)  # a caller that counted nothing: the body's size, the rest of the window
    budget = server.requests[1]["max_completion_tokens"]
    assert 0 < budget <= 8192
    big = [{"role": "system", "content": "word " * 12_000}, {"role": "user", "content": "hi"}]
    send(provider_for(server, "kimi-k3", window=8192), 8192, big)  # the whole window asked for: clamped
    assert server.requests[2]["max_completion_tokens"] == lookup("kimi-k3").answer_room(8192)


def test_a_refused_max_completion_tokens_falls_back_to_max_tokens(server: ScriptedModelServer) -> None:
    refusal = {"error": {"message": "Unrecognized request argument supplied: max_completion_tokens"}}
    server.add({"error": 400, "body": refusal}, {"text": "ok"})
    provider = provider_for(server, "kimi-k3")
    assert send(provider, 900).text == "ok"
    assert server.requests[0]["max_completion_tokens"] == 900
    assert server.requests[1]["max_tokens"] == 900 and "max_completion_tokens" not in server.requests[1]


@pytest.mark.parametrize(
    ("message", "window"),
    [
        ("request (6031 tokens) exceeds the available context size (4096 tokens), try increasing it", 4096),
        (
            "'max_tokens' or 'max_completion_tokens' is too large: 5000. This model's maximum context length is "
            "4096 tokens and your request has 3500 input tokens (5000 > 4096 - 3500).",
            4096,
        ),
        ("Invalid request: Your request exceeded model token limit: 262144 (requested: 269030)", 262144),
    ],
)
def test_a_servers_too_long_teaches_the_window_and_drops_no_field(
    server: ScriptedModelServer, private_home: Path, message: str, window: int
) -> None:
    server.add({"error": 400, "body": {"error": {"message": message, "type": "invalid_request_error"}}})
    provider = provider_for(server, "kimi-k3", window=1_048_576)
    learned: list[int] = []
    provider.on_window = learned.append
    with pytest.raises(ContextOverflow) as caught:
        send(provider, 5000)
    assert caught.value.window == window and learned == [window] and provider.window == window
    assert len(server.requests) == 1 and not provider.dropped  # "'max_tokens' ... too large" is no refusal
    cached = json.loads((private_home / ".kimi" / "endpoints.json").read_text())
    assert cached[f"{server.base_url} kimi-k3"]["context_length"] == window  # the next session starts from it


def test_window_figures_in_each_servers_words() -> None:
    assert window_in("model max length exceeded, max length:8192") == (8192, None)
    assert window_in("The decoder prompt (length 5000) is longer than the maximum model length of 4096.") == (
        4096, 5000,
    )  # fmt: skip
    assert window_in("context too long") == (None, None)
    info = lookup("kimi-k3")
    assert answer_budget(info, 4096, 3000) == 1096 and answer_budget(info, 4096, 3700) is None  # < 512 left
    assert answer_budget(info, 1_048_576, 1000, configured=4000) == 4000


def test_the_servers_tokenizer_counts_each_block_once() -> None:
    for dialect in ("llama", "vllm"):
        with ScriptedModelServer(tokenize=dialect) as srv:
            counter = ServerTokenizer(srv.base_url, "EMPTY", "kimi-test")
            assert counter.count("def add(a, b): return a + b") == len(count_tokens("def add(a, b): return a + b"))
            assert counter.dialect == dialect
            asked = counter.asked
            assert counter.count("def add(a, b): return a + b") == 12 and counter.asked == asked  # cached
            assert counter.count_request(MESSAGES, TOOLS) is not None
    with ScriptedModelServer() as plain:  # no /tokenize: said once, then never asked again
        counter = ServerTokenizer(plain.base_url, "EMPTY", "kimi-test")
        assert counter.count("x") is None and not counter.available
        asked = counter.asked
        assert counter.count("y") is None and counter.asked == asked


def test_a_step_counts_only_the_blocks_it_added(repo: Path) -> None:
    with ScriptedModelServer(tokenize="llama") as srv:
        server = ServerTokenizer(srv.base_url, "EMPTY", "kimi-test")
        meter = RequestMeter(None, lookup("kimi-test"), server)
        history = [{"role": "system", "content": "the pack " * 500}, {"role": "user", "content": "fix it"}]
        first = meter.request(history, TOOLS)
        counted = len(srv.tokenized)
        history.append({"role": "tool", "tool_call_id": "c1", "content": "output " * 50})
        meter.counted(history, TOOLS)
        assert len(srv.tokenized) == counted + 1  # the new tool output only
        assert first >= len(count_tokens(history[0]["content"]))


def bound_context(repo: Path, window: int, provider: Any = None, **kw: Any) -> tuple[Any, list[str]]:
    """The real SessionContext for `repo`, its window `window`, bound as an agent binds it."""
    ctx = context_for(repo, context_length=window, budget=kw.pop("budget", int(window * 0.6)), **kw)
    told: list[str] = []
    ctx.bind(provider or FakeProvider(), told.append, lambda: TOOLS)
    return ctx, told


def big_repo(repo: Path, files: int = 40) -> Path:
    for i in range(files):
        (repo / f"mod{i}.py").write_text("".join(f"def f{i}_{j}(x):\n    return x + {j}\n" for j in range(60)))
    return repo


def test_a_pack_budget_larger_than_the_window_is_clamped_with_a_notice(repo: Path) -> None:
    ctx, told = bound_context(big_repo(repo), 8192, budget=50_000)
    system = ctx.system_message("fix add")
    assert ctx.last_pack is not None and ctx.last_pack.tokens < 8192
    assert ctx.meter.request([system, user("fix add")], TOOLS) + ctx.meter.info.answer_room(8192) <= 8192
    assert any("pack budget (50,000 tokens)" in m and "8,192" in m for m in told), told
    roomy, told = bound_context(repo, 1_048_576, budget=20_000)
    roomy.system_message("fix add")
    assert not told  # a budget the window holds is not touched


def long_history(ctx: Any, task: str = "fix add in calc.py") -> list[dict[str, Any]]:
    history = [ctx.system_message(task), user(task)]
    for i in range(6):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "ReadFile", "arguments": '{"path": "x"}'}}
        history.append({"role": "assistant", "content": "", "tool_calls": [call]})
        history.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 300})
    return history


@pytest.mark.parametrize("window", [4096, 8192, 32_768])
def test_compaction_never_produces_a_request_larger_than_the_one_it_replaced(repo: Path, window: int) -> None:
    ctx, _ = bound_context(big_repo(repo), window, budget=window * 4)  # a budget far over the window
    history = long_history(ctx)
    before = ctx.estimate(history, 0, 0)
    summary = text("Summary: " + "the work went on. " * 400)  # a long summary too
    provider = FakeProvider(summary)
    new = asyncio.run(ctx.compact(provider, history, [], ["calc.py"]))
    after = ctx.meter.request(new, TOOLS)
    assert after <= before, (after, before)
    assert after + ctx.meter.info.answer_room(window) <= window
    (summary_request,) = provider.requests
    assert (
        summary_request.max_tokens
        and ctx.meter.request(summary_request.messages) + summary_request.max_tokens <= window
    )


def test_compaction_of_a_first_request_that_does_not_fit_keeps_the_task_and_shrinks_the_pack(repo: Path) -> None:
    ctx, told = bound_context(big_repo(repo), 100_000, budget=20_000)
    history = [ctx.system_message("fix add"), user("fix add")]
    ctx.learn_window(8192)  # the server turned out to have a smaller window than the pack was made for
    assert any("8,192 tokens, not 100,000" in m for m in told)
    before = ctx.estimate(history, 0, 0)
    assert ctx.should_compact(history, 0, 0)
    provider = FakeProvider()  # nothing to summarise: the model is not asked
    new = asyncio.run(ctx.compact(provider, history, [], []))
    assert not provider.requests and new[1:] == history[1:]
    assert ctx.meter.request(new, TOOLS) <= before and not ctx.should_compact(new, 0, 0)


def test_a_window_too_small_for_the_prompt_and_tools_stops_with_a_message(repo: Path) -> None:
    with ScriptedModelServer(tokenize="llama") as srv:
        provider = ChatProvider(Endpoint("openai", srv.base_url, "kimi-test", "EMPTY"), RetrySettings(), "s",
                                model_info=with_context(lookup("kimi-test"), 1024))  # fmt: skip
        ctx = context_for(repo, context_length=1024, budget=600)
        ctx.bind(provider, lambda m: None, lambda: TOOLS * 40)  # 40 tools: more than the window
        history = [ctx.system_message("fix add"), user("fix add")]
        with pytest.raises(WindowTooSmall, match="cannot hold kimi's system prompt and tools"):
            asyncio.run(ctx.compact(FakeProvider(), history, [], []))


def test_an_overflow_teaches_the_window_compacts_once_and_never_loops(repo: Path) -> None:
    ctx = context_for(repo, pack=False, context_length=100_000)
    refusal = ContextOverflow("request (9000 tokens) exceeds the available context size (8192 tokens)", 8192, 9000)

    class Teaching(FakeProvider):
        on_window: Any = None

        async def complete(self, messages: Any, tools: Any, callbacks: Any = None, max_tokens: Any = None) -> Any:
            try:
                return await super().complete(messages, tools, callbacks, max_tokens)
            except ContextOverflow as exc:
                if exc.window is not None and self.on_window is not None:
                    self.on_window(exc.window)  # as ChatProvider.learn_window tells the context
                raise

    provider = Teaching(refusal, text("answered"))
    emitted: list[Any] = []
    agent = agent_for(provider, [], repo, context=ctx, messages=[ctx.system_message("t")], emitted=emitted)
    assert asyncio.run(agent.run(user("t"))).text == "answered"
    assert ctx.context_length == 8192
    assert any("window is 8,192 tokens, not 100,000" in getattr(e, "message", "") for e in emitted)
    looping = Teaching(refusal, refusal, text("never reached"))
    agent = agent_for(looping, [], repo, context=ctx, messages=[ctx.system_message("t")])
    with pytest.raises(KimiError, match="still too long after compaction"):
        asyncio.run(agent.run(user("t")))
    assert len(looping.requests) == 2  # once more, never in a loop


@pytest.mark.parametrize("template_tools", [False, True])
def test_the_first_pack_in_a_small_window_is_sized_by_the_servers_count(repo: Path, template_tools: bool) -> None:
    """The pack is made before the agent (its provider, its tools) exists. In an 8k window kimi's estimate
    (its margin, and a reserve for tools the template may not render at all) left no pack; the endpoint's
    own tokenizer, asked then, sizes it, and the first request still fits with its smallest answer."""
    big_repo(repo, files=80)
    estimated = context_for(repo, context_length=8192, budget=int(8192 * 0.6), compact_at=0.85)
    estimated.system_message("fix add")
    with ScriptedModelServer(tokenize="llama") as srv:
        srv.template_tools = template_tools
        server = ServerTokenizer(srv.base_url, "EMPTY", "kimi-test")
        ctx = context_for(repo, context_length=8192, budget=int(8192 * 0.6), compact_at=0.85,
                          server_tokens=lambda: server)  # fmt: skip
        system = ctx.system_message("fix add")
        assert ctx.meter.server is server and server.renders_tools() is template_tools
        assert ctx.last_pack is not None
        if not template_tools:  # SmolLM2's case: the tools take none of the window, the pack their room
            assert estimated.last_pack is None or ctx.last_pack.tokens > estimated.last_pack.tokens
            assert ctx.last_pack.tokens > 2000
        endpoint = Endpoint("openai", srv.base_url, "kimi-test", "EMPTY")
        provider = ChatProvider(endpoint, RetrySettings(), "s", model_info=with_context(lookup("kimi-test"), 8192))
        ctx.bind(provider, lambda _m: None, lambda: TOOLS)
        first = [system, user("fix add")]
        assert ctx.meter.request(first, TOOLS) + ctx.meter.info.answer_room(8192) <= 8192
        assert not ctx.should_compact(first, 0, 0)


def test_a_large_window_never_asks_the_server_to_count_the_first_pack(repo: Path) -> None:
    asked: list[int] = []
    ctx = context_for(repo, context_length=262_144, budget=20_000, server_tokens=lambda: asked.append(1))  # type: ignore[arg-type,return-value]
    ctx.system_message("fix add")
    assert ctx.last_pack is not None and not asked and ctx.meter.server is None
