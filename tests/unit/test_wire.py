"""The incrementally encoded request body, and chunks assembled into one answer."""

from __future__ import annotations

import json

import pytest

from kimi_cli.llm.assemble import ChunkAssembler, StreamCallbacks
from kimi_cli.llm.failures import EmptyStream, StreamIncomplete
from kimi_cli.llm.types import Usage
from kimi_cli.llm.wire import EncodedHistory

FIELDS = {"model": "kimi-test", "stream": True}
TOOLS = [{"type": "function", "function": {"name": "Probe", "parameters": {"type": "object", "properties": {}}}}]


def test_the_body_is_the_same_json_a_plain_encoder_would_write() -> None:
    messages = [{"role": "system", "content": "sé"}, {"role": "user", "content": "ünïcode \u2028 fine"}]
    body = EncodedHistory().body(FIELDS, messages, TOOLS)
    assert json.loads(body) == {**FIELDS, "tools": TOOLS, "messages": messages}
    assert "sé".encode() in body  # not \\u-escaped: fewer bytes


def test_only_messages_added_since_the_last_body_are_encoded() -> None:
    history = EncodedHistory()
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    history.body(FIELDS, messages, TOOLS)
    assert history.encoded_last == 2
    messages.append({"role": "assistant", "content": "a"})
    body = history.body(FIELDS, messages, TOOLS)
    assert history.encoded_last == 1 and json.loads(body)["messages"] == messages


def test_a_replaced_message_is_encoded_again_from_its_index_on() -> None:
    history = EncodedHistory()
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, {"role": "user", "content": "v"}]
    history.body(FIELDS, messages, [])
    messages[1] = {"role": "user", "content": "changed"}
    body = history.body(FIELDS, messages, [])
    assert history.encoded_last == 2 and json.loads(body)["messages"][1]["content"] == "changed"
    assert "tools" not in json.loads(body)


def test_a_shorter_history_after_compaction_drops_the_old_parts() -> None:
    history = EncodedHistory()
    history.body(FIELDS, [{"role": "user", "content": str(i)} for i in range(5)], [])
    short = [{"role": "system", "content": "fresh"}]
    assert json.loads(history.body(FIELDS, short, []))["messages"] == short
    assert json.loads(history.body(FIELDS, [], []))["messages"] == []


def test_the_tools_are_encoded_once_while_the_list_is_the_same_object() -> None:
    history = EncodedHistory()
    first = history.tools_json(TOOLS)
    assert history.tools_json(TOOLS) is first
    assert history.tools_json(list(TOOLS)) == first


def chunk(delta: dict, finish: str | None = None, **extra: object) -> dict:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def test_deltas_are_assembled_and_streamed_to_the_callbacks() -> None:
    seen: list[str] = []
    assembler = ChunkAssembler(StreamCallbacks(on_text=seen.append, on_reasoning=lambda d: seen.append("r:" + d)))
    for piece in (chunk({"reasoning_content": "th"}), chunk({"reasoning": "ink"}), chunk({"content": "an"}),
                  chunk({"content": "swer"}, "stop")):  # fmt: skip
        assembler.feed(piece)
    done = assembler.finish()
    assert (done.text, done.reasoning, done.finish_reason) == ("answer", "think", "stop")
    assert seen == ["r:th", "r:ink", "an", "swer"]
    assert not done.usage_reported


def test_tool_calls_split_over_chunks_come_together_by_index() -> None:
    assembler = ChunkAssembler(StreamCallbacks())
    assembler.feed(chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "Two", "arguments": ""}}]}))
    assembler.feed(chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "One", "arguments": '{"x"'}}]}))
    assembler.feed(chunk({"tool_calls": [{"index": 0, "function": {"name": "One", "arguments": ": 1}"}}]}))
    assembler.feed(chunk({"tool_calls": [{"function": {"arguments": "{}"}}]}))  # no index: by position
    assembler.feed(chunk({}, "tool_calls"))
    calls = assembler.finish().tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [("a", "One", '{"x": 1}{}'), ("b", "Two", "")]


def test_a_name_split_in_pieces_is_joined_and_a_repeated_whole_name_is_not_doubled() -> None:
    assembler = ChunkAssembler(StreamCallbacks())
    for name in ("Read", "File", "ReadFile"):
        assembler.feed(chunk({"tool_calls": [{"index": 0, "function": {"name": name}}]}))
    assembler.feed(chunk({}, "tool_calls"))
    call = assembler.finish().tool_calls[0]
    assert call.name == "ReadFile" and call.id == "call_0"


def test_usage_is_read_at_the_top_or_inside_the_choice_with_cached_tokens_either_way() -> None:
    top = ChunkAssembler(StreamCallbacks())
    top.feed(chunk({}, "stop", usage={"prompt_tokens": 9, "completion_tokens": 2,
                                      "prompt_tokens_details": {"cached_tokens": 4}}))  # fmt: skip
    assert top.finish().usage == Usage(9, 2, 4)
    moonshot = ChunkAssembler(StreamCallbacks())
    inside = {"prompt_tokens": 5, "completion_tokens": 1, "cached_tokens": 3}
    moonshot.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "usage": inside}]})
    done = moonshot.finish()
    assert done.usage == Usage(5, 1, 3) and done.usage_reported


def test_an_empty_stream_and_a_stream_without_finish_reason_are_failures() -> None:
    with pytest.raises(EmptyStream):
        ChunkAssembler(StreamCallbacks()).finish()
    unfinished = ChunkAssembler(StreamCallbacks())
    unfinished.feed(chunk({"content": "half"}))
    with pytest.raises(StreamIncomplete):
        unfinished.finish()


def test_usage_round_trips_through_its_dict() -> None:
    usage = Usage(7, 3, 2)
    assert Usage.from_dict(usage.as_dict()) == usage and usage.total_tokens == 10
